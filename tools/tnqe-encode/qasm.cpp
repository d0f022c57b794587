// qasm.cpp - OpenQASM 2.0 export and import (the subset in circuit.hpp).
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>

#include "tnqe-encode/circuit.hpp"
#include "nk/error.hpp"

namespace tnqe {
namespace {

std::string fmt(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

[[noreturn]] void fail(const std::string& name, int line, const std::string& what) {
  throw nk::input_error(name, "", "OpenQASM line " + std::to_string(line) + ": " + what);
}

/// Recursive-descent evaluation of a gate parameter: numbers, pi, + - * / ^,
/// unary minus, parentheses and sin cos tan exp ln sqrt.
class Expr {
 public:
  Expr(const std::string& text, const std::string& name, int line) : s_(text), name_(name), line_(line) {}
  double parse() {
    const double v = sum();
    skip();
    if (i_ != s_.size()) fail(name_, line_, "cannot read the expression '" + s_ + "'");
    return v;
  }

 private:
  void skip() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
  }
  bool eat(char c) {
    skip();
    if (i_ < s_.size() && s_[i_] == c) {
      ++i_;
      return true;
    }
    return false;
  }
  double sum() {
    double v = product();
    for (;;) {
      if (eat('+'))
        v += product();
      else if (eat('-'))
        v -= product();
      else
        return v;
    }
  }
  double product() {
    double v = power();
    for (;;) {
      if (eat('*'))
        v *= power();
      else if (eat('/'))
        v /= power();
      else
        return v;
    }
  }
  // Nesting (parentheses, unary signs, right-associative powers) is bounded:
  // a file of a million '(' would otherwise overflow the stack.
  struct Nest {
    explicit Nest(Expr& e) : e_(e) {
      if (++e_.depth_ > kMaxDepth) fail(e_.name_, e_.line_, "expression nested deeper than " + std::to_string(kMaxDepth) + " levels");
    }
    ~Nest() { --e_.depth_; }
    Expr& e_;
  };
  static constexpr int kMaxDepth = 200;
  double power() {
    const double base = unary();
    if (eat('^')) {
      Nest nest(*this);
      return std::pow(base, power());
    }
    return base;
  }
  double unary() {
    if (eat('-')) {
      Nest nest(*this);
      return -unary();
    }
    if (eat('+')) {
      Nest nest(*this);
      return unary();
    }
    return atom();
  }
  double atom() {
    skip();
    if (eat('(')) {
      Nest nest(*this);
      const double v = sum();
      if (!eat(')')) fail(name_, line_, "missing ')' in '" + s_ + "'");
      return v;
    }
    if (i_ < s_.size() && (std::isdigit(static_cast<unsigned char>(s_[i_])) || s_[i_] == '.')) {
      size_t used = 0;
      double v = 0;
      try {
        v = std::stod(s_.substr(i_), &used);
      } catch (const std::exception&) {  // out of range (1e400) or no digits ('.')
        fail(name_, line_, "bad number in '" + s_ + "'");
      }
      i_ += used;
      return v;
    }
    std::string word;
    while (i_ < s_.size() && std::isalpha(static_cast<unsigned char>(s_[i_]))) word += s_[i_++];
    if (word == "pi") return kPi;
    static const std::map<std::string, double (*)(double)> fns = {
        {"sin", [](double x) { return std::sin(x); }}, {"cos", [](double x) { return std::cos(x); }},
        {"tan", [](double x) { return std::tan(x); }}, {"exp", [](double x) { return std::exp(x); }},
        {"ln", [](double x) { return std::log(x); }},  {"sqrt", [](double x) { return std::sqrt(x); }}};
    const auto f = fns.find(word);
    if (f != fns.end()) {
      if (!eat('(')) fail(name_, line_, "expected '(' after " + word);
      Nest nest(*this);
      const double v = sum();
      if (!eat(')')) fail(name_, line_, "missing ')' after " + word);
      return f->second(v);
    }
    fail(name_, line_, "cannot read the expression '" + s_ + "'");
  }
  std::string s_, name_;
  int depth_ = 0;
  int line_;
  size_t i_ = 0;
};

std::string trim(const std::string& s) {
  size_t a = 0, b = s.size();
  while (a < b && std::isspace(static_cast<unsigned char>(s[a]))) ++a;
  while (b > a && std::isspace(static_cast<unsigned char>(s[b - 1]))) --b;
  return s.substr(a, b - a);
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  int depth = 0;
  for (char c : s) {
    if (c == '(') ++depth;
    if (c == ')') --depth;
    if (c == sep && depth == 0) {
      out.push_back(trim(cur));
      cur.clear();
    } else {
      cur += c;
    }
  }
  out.push_back(trim(cur));
  return out;
}

}  // namespace

std::string to_qasm(const Circuit& c, const std::string& comment) {
  std::ostringstream os;
  os << "OPENQASM 2.0;\n";
  if (!comment.empty()) {
    std::istringstream lines(comment);
    for (std::string l; std::getline(lines, l);) os << "// " << l << "\n";
  }
  os << "include \"qelib1.inc\";\n";
  os << "qreg q[" << c.qubits << "];\n";
  for (const Gate& g : c.gates) {
    if (g.kind == Gate::cx)
      os << "cx q[" << g.q0 << "],q[" << g.q1 << "];\n";
    else
      os << "u3(" << fmt(g.theta) << "," << fmt(g.phi) << "," << fmt(g.lambda) << ") q[" << g.q0 << "];\n";
  }
  return os.str();
}

Circuit parse_qasm(const std::string& text, const std::string& name) {
  // Strip comments, keeping line numbers for messages.
  std::string clean;
  std::vector<int> line_of;  // line number of each character of 'clean'
  int line = 1;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '/' && i + 1 < text.size() && text[i + 1] == '/') {
      while (i < text.size() && text[i] != '\n') ++i;
      if (i >= text.size()) break;
    }
    clean += text[i];
    line_of.push_back(line);
    if (text[i] == '\n') ++line;
  }
  std::map<std::string, std::pair<int, int>> qregs;  // name -> (offset, size)
  Circuit c;
  bool header = false;
  size_t start = 0;
  // A register index or size: decimal digits only ("1x", "+1", "1e3" are refused).
  auto integer = [](const std::string& text, int& value) {
    const std::string t = trim(text);
    if (t.empty() || t.size() > 9 || !std::all_of(t.begin(), t.end(), [](char ch) { return ch >= '0' && ch <= '9'; })) return false;
    value = std::stoi(t);
    return true;
  };
  auto qubit_list = [&](const std::string& arg, int ln) {
    std::vector<int> out;
    const auto lb = arg.find('[');
    const std::string reg = trim(arg.substr(0, lb));
    const auto it = qregs.find(reg);
    if (it == qregs.end()) fail(name, ln, "unknown register '" + reg + "'");
    if (lb == std::string::npos) {
      for (int q = 0; q < it->second.second; ++q) out.push_back(it->second.first + q);
      return out;
    }
    const auto rb = arg.find(']', lb);
    if (rb == std::string::npos) fail(name, ln, "missing ']' in '" + arg + "'");
    int index = -1;
    if (!integer(arg.substr(lb + 1, rb - lb - 1), index) || !trim(arg.substr(rb + 1)).empty()) {
      fail(name, ln, "bad index in '" + arg + "'");
    }
    if (index < 0 || index >= it->second.second)
      fail(name, ln, "index " + std::to_string(index) + " outside register " + reg + "[" +
                         std::to_string(it->second.second) + "]");
    out.push_back(it->second.first + index);
    return out;
  };
  std::vector<std::pair<std::vector<double>, std::vector<std::vector<int>>>> pending;
  std::vector<std::string> pending_name;
  std::vector<int> pending_line;
  while (start < clean.size()) {
    const size_t end = clean.find_first_of(";{", start);
    if (end == std::string::npos) {
      if (!trim(clean.substr(start)).empty())
        fail(name, line_of[start], "statement without ';': '" + trim(clean.substr(start)) + "'");
      break;
    }
    size_t first = start;
    while (first < end && std::isspace(static_cast<unsigned char>(clean[first]))) ++first;
    const int ln = first < line_of.size() ? line_of[first] : line;
    const std::string st = trim(clean.substr(start, end - start));
    start = end + 1;
    if (clean[end] == '{') fail(name, ln, "gate definitions are not supported ('" + st + "')");
    if (st.empty()) continue;
    if (st.rfind("OPENQASM", 0) == 0) {
      if (trim(st.substr(8)) != "2.0") fail(name, ln, "only OpenQASM 2.0 is supported, not '" + st + "'");
      header = true;
      continue;
    }
    if (!header) fail(name, ln, "the file must start with 'OPENQASM 2.0;'");
    if (st.rfind("include", 0) == 0) continue;
    if (st.rfind("qreg", 0) == 0 || st.rfind("creg", 0) == 0) {
      const std::string decl = trim(st.substr(4));
      const auto lb = decl.find('['), rb = decl.find(']');
      if (lb == std::string::npos || rb == std::string::npos) fail(name, ln, "bad register declaration '" + st + "'");
      int size = 0;
      if (!integer(decl.substr(lb + 1, rb - lb - 1), size) || !trim(decl.substr(rb + 1)).empty()) {
        fail(name, ln, "bad register size in '" + st + "'");
      }
      if (size <= 0 || size > 64) fail(name, ln, "register size " + std::to_string(size) + " outside 1..64");
      if (st[0] == 'q') {
        qregs[trim(decl.substr(0, lb))] = {c.qubits, size};
        c.qubits += size;
      }
      continue;
    }
    if (st.rfind("barrier", 0) == 0 || st.rfind("measure", 0) == 0) continue;
    // A gate: NAME[(params)] args
    size_t k = 0;
    while (k < st.size() && (std::isalnum(static_cast<unsigned char>(st[k])) || st[k] == '_')) ++k;
    const std::string gate = st.substr(0, k);
    std::vector<double> params;
    std::string rest = trim(st.substr(k));
    if (!rest.empty() && rest[0] == '(') {
      int depth = 0;
      size_t close = 0;
      for (size_t t = 0; t < rest.size(); ++t) {
        if (rest[t] == '(') ++depth;
        if (rest[t] == ')' && --depth == 0) {
          close = t;
          break;
        }
      }
      if (close == 0) fail(name, ln, "missing ')' in '" + st + "'");
      for (const std::string& e : split(rest.substr(1, close - 1), ','))
        if (!e.empty()) params.push_back(Expr(e, name, ln).parse());
      rest = trim(rest.substr(close + 1));
    }
    std::vector<std::vector<int>> args;
    for (const std::string& a : split(rest, ','))
      if (!a.empty()) args.push_back(qubit_list(a, ln));
    pending.push_back({params, args});
    pending_name.push_back(gate);
    pending_line.push_back(ln);
  }
  if (!header) fail(name, 1, "empty or missing 'OPENQASM 2.0;' header");
  if (c.qubits == 0) fail(name, line, "no qreg declared");
  if (c.qubits > 30) fail(name, line, std::to_string(c.qubits) + " qubits: more than the 30 this simulator accepts");
  static const std::map<std::string, std::pair<int, int>> arity = {
      {"U", {3, 1}},  {"u", {3, 1}},    {"u3", {3, 1}}, {"u2", {2, 1}}, {"u1", {1, 1}}, {"p", {1, 1}},
      {"id", {0, 1}}, {"x", {0, 1}},    {"y", {0, 1}},  {"z", {0, 1}},  {"h", {0, 1}},  {"s", {0, 1}},
      {"sdg", {0, 1}}, {"t", {0, 1}},   {"tdg", {0, 1}}, {"sx", {0, 1}}, {"sxdg", {0, 1}}, {"rx", {1, 1}},
      {"ry", {1, 1}}, {"rz", {1, 1}},   {"CX", {0, 2}}, {"cx", {0, 2}}, {"cz", {0, 2}}, {"cy", {0, 2}},
      {"swap", {0, 2}}};
  for (size_t s = 0; s < pending.size(); ++s) {
    const std::string& g = pending_name[s];
    const int ln = pending_line[s];
    const auto& [p, args] = pending[s];
    if (g == "reset" || g == "if" || g == "opaque" || g == "gate")
      fail(name, ln, "'" + g + "' is not supported (state preparation circuits are unitary)");
    const auto a = arity.find(g);
    if (a == arity.end())
      fail(name, ln, "unsupported gate '" + g +
                         "' (supported: U u u3 u2 u1 p id x y z h s sdg t tdg sx sxdg rx ry rz CX cx cz cy swap)");
    if (static_cast<int>(p.size()) != a->second.first)
      fail(name, ln, g + " takes " + std::to_string(a->second.first) + " parameters, not " + std::to_string(p.size()));
    if (static_cast<int>(args.size()) != a->second.second)
      fail(name, ln, g + " takes " + std::to_string(a->second.second) + " qubit arguments, not " +
                         std::to_string(args.size()));
    size_t reps = 1;
    for (const auto& l : args) reps = std::max(reps, l.size());
    for (const auto& l : args)
      if (l.size() != 1 && l.size() != reps) fail(name, ln, "registers of different sizes in '" + g + "'");
    for (size_t r = 0; r < reps; ++r) {
      const int q = args[0].size() == 1 ? args[0][0] : args[0][r];
      const int t = args.size() > 1 ? (args[1].size() == 1 ? args[1][0] : args[1][r]) : -1;
      if (t == q) fail(name, ln, g + " on the same qubit twice");
      if (g == "U" || g == "u" || g == "u3") c.u3(q, p[0], p[1], p[2]);
      else if (g == "u2") c.u3(q, kPi / 2, p[0], p[1]);
      else if (g == "u1" || g == "p" || g == "rz") c.u3(q, 0, 0, p[0]);
      else if (g == "id") continue;
      else if (g == "x") c.u3(q, kPi, 0, kPi);
      else if (g == "y") c.u3(q, kPi, kPi / 2, kPi / 2);
      else if (g == "z") c.u3(q, 0, 0, kPi);
      else if (g == "h") c.h(q);
      else if (g == "s") c.u3(q, 0, 0, kPi / 2);
      else if (g == "sdg") c.u3(q, 0, 0, -kPi / 2);
      else if (g == "t") c.u3(q, 0, 0, kPi / 4);
      else if (g == "tdg") c.u3(q, 0, 0, -kPi / 4);
      else if (g == "sx") c.u3(q, kPi / 2, -kPi / 2, kPi / 2);
      else if (g == "sxdg") c.u3(q, -kPi / 2, -kPi / 2, kPi / 2);
      else if (g == "rx") c.u3(q, p[0], -kPi / 2, kPi / 2);
      else if (g == "ry") c.u3(q, p[0], 0, 0);
      else if (g == "CX" || g == "cx") c.cx(q, t);
      else if (g == "cz") { c.h(t); c.cx(q, t); c.h(t); }
      else if (g == "cy") { c.u3(t, 0, 0, -kPi / 2); c.cx(q, t); c.u3(t, 0, 0, kPi / 2); }
      else if (g == "swap") { c.cx(q, t); c.cx(t, q); c.cx(q, t); }
    }
  }
  return c;
}

}  // namespace tnqe
