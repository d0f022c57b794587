// synthetic.cpp - single-line mutations inside functions.
#include "swe-crafter/synthetic.hpp"

#include <algorithm>
#include <cctype>
#include <sstream>

namespace swec {

namespace {

std::vector<std::string> split_lines(const std::string& s) {
  std::vector<std::string> out;
  std::string line;
  std::istringstream in(s);
  while (std::getline(in, line)) out.push_back(line);
  return out;
}

size_t indent_of(const std::string& l) {
  size_t i = 0;
  while (i < l.size() && (l[i] == ' ' || l[i] == '\t')) ++i;
  return i;
}

std::string trim(const std::string& s) {
  const size_t a = s.find_first_not_of(" \t");
  if (a == std::string::npos) return "";
  const size_t b = s.find_last_not_of(" \t\r");
  return s.substr(a, b - a + 1);
}

bool starts(const std::string& s, const char* p) {
  return s.rfind(p, 0) == 0;
}

/// A mask of the characters outside quotes and after no comment marker.
std::vector<bool> code_mask(const std::string& line, bool python) {
  std::vector<bool> ok(line.size(), true);
  char quote = 0;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quote) {
      ok[i] = false;
      if (c == '\\') {
        if (i + 1 < line.size()) ok[++i] = false;
      } else if (c == quote) {
        quote = 0;
      }
      continue;
    }
    if (c == '"' || c == '\'' || c == '`') {
      quote = c;
      ok[i] = false;
      continue;
    }
    const bool comment =
        python ? c == '#' : (c == '/' && i + 1 < line.size() && (line[i + 1] == '/' || line[i + 1] == '*'));
    if (comment) {
      for (size_t k = i; k < line.size(); ++k) ok[k] = false;
      break;
    }
  }
  return ok;
}

/// The first occurrence of 'token' at code positions, or npos.
size_t find_code(const std::string& line, const std::vector<bool>& ok, const std::string& token, size_t from = 0) {
  for (size_t at = line.find(token, from); at != std::string::npos; at = line.find(token, at + 1)) {
    bool all = true;
    for (size_t k = at; k < at + token.size(); ++k) all = all && ok[k];
    if (all) return at;
  }
  return std::string::npos;
}

bool ident(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}

void mutations_of_line(const std::string& line, int64_t number, bool python, bool removable, bool repair,
                       std::vector<Mutation>& out) {
  const std::vector<bool> ok = code_mask(line, python);
  auto replace = [&](const char* kind, size_t at, size_t len, const std::string& with) {
    Mutation m;
    m.kind = kind;
    m.line = number;
    m.before = line;
    m.after = line.substr(0, at) + with + line.substr(at + len);
    out.push_back(m);
  };
  // operators (spaced, as formatted code writes them)
  // (bugs turn * into / and never / into *: a repair's edits add that, to undo them)
  static const std::vector<std::pair<const char*, const char*>> flips = {
      {" + ", " - "},   {" - ", " + "},    {" * ", " / "},     {" == ", " != "},   {" != ", " == "},
      {" && ", " || "}, {" || ", " && "},  {" and ", " or "},  {" or ", " and "},  {" === ", " !== "},
      {" !== ", " === "}};
  static const std::vector<std::pair<const char*, const char*>> repairs = [] {
    std::vector<std::pair<const char*, const char*>> r = flips;
    r.emplace_back(" / ", " * ");
    return r;
  }();
  for (const auto& [from, to] : repair ? repairs : flips) {
    const size_t at = find_code(line, ok, from);
    if (at != std::string::npos) {
      replace("operator", at, std::string(from).size(), to);
      break;
    }
  }
  static const std::pair<const char*, const char*> bounds[] = {
      {" <= ", " < "}, {" >= ", " > "}, {" < ", " <= "}, {" > ", " >= "}};
  for (const auto& [from, to] : bounds) {
    const size_t at = find_code(line, ok, from);
    if (at != std::string::npos) {
      replace("off-by-one", at, std::string(from).size(), to);
      break;
    }
  }
  // a constant: an integer literal standing alone
  for (size_t i = 0; i < line.size(); ++i) {
    if (!ok[i] || !std::isdigit(static_cast<unsigned char>(line[i]))) continue;
    if (i > 0 && (ident(line[i - 1]) || line[i - 1] == '.')) continue;
    size_t j = i;
    while (j < line.size() && std::isdigit(static_cast<unsigned char>(line[j]))) ++j;
    if (j < line.size() && (ident(line[j]) || line[j] == '.')) {
      i = j;
      continue;
    }
    if (j - i <= 9) {
      replace("constant", i, j - i, std::to_string(std::stoll(line.substr(i, j - i)) + 1));
      break;
    }
    i = j;
  }
  // two simple arguments swapped: NAME(a, b)
  for (size_t open = line.find('('); open != std::string::npos; open = line.find('(', open + 1)) {
    if (!ok[open] || open == 0 || !ident(line[open - 1])) continue;
    const size_t close = line.find(')', open);
    if (close == std::string::npos || !ok[close]) continue;
    const std::string inside = line.substr(open + 1, close - open - 1);
    const size_t comma = inside.find(", ");
    if (comma == std::string::npos || inside.find(',', comma + 1) != std::string::npos ||
        inside.find_first_of("()[]{}\"'=") != std::string::npos)
      continue;
    const std::string a = trim(inside.substr(0, comma)), b = trim(inside.substr(comma + 2));
    if (a.empty() || b.empty() || a == b) continue;
    replace("swap-arguments", open + 1, close - open - 1, b + ", " + a);
    break;
  }
  if (removable) {
    Mutation m;
    m.kind = "remove-statement";
    m.line = number;
    m.before = line;
    m.removes = true;
    out.push_back(m);
  }
}

bool python_statement(const std::string& t) {
  for (const char* k : {"def ",   "class ",  "if ",     "elif ",     "else",   "for ", "while ",  "try",
                        "except", "finally", "with ",   "return",    "pass",   "@",    "import ", "from ",
                        "raise",  "yield",   "global ", "nonlocal ", "\"\"\"", "'''",  "#"}) {
    if (starts(t, k)) return false;
  }
  return !t.empty() && t.back() != ':' && t.back() != '(' && t.back() != '[' && t.back() != '{' && t.back() != ',' &&
         t.back() != '\\';
}

bool brace_statement(const std::string& t) {
  if (t.empty() || t.back() != ';') return false;
  for (const char* k : {"return", "break", "continue", "//", "/*", "*", "}", "case ", "default", "#"}) {
    if (starts(t, k)) return false;
  }
  // an assignment to something that exists, an update or a call; not a declaration
  size_t i = 0;
  while (i < t.size() &&
         (ident(t[i]) || t[i] == '$' || t[i] == '.' || t[i] == '-' || t[i] == '>' || t[i] == '[' || t[i] == ']'))
    ++i;
  const std::string rest = t.substr(i);
  return i > 0 && (starts(rest, " = ") || starts(rest, " += ") || starts(rest, " -= ") || starts(rest, "++") ||
                   starts(rest, "--") || starts(rest, "(") || starts(rest, " *= "));
}

bool ruby_statement(const std::string& t) {
  std::string word;
  for (char c : t) {
    if (!ident(c)) break;
    word += c;
  }
  for (const char* k : {"def", "class", "module", "if", "unless", "elsif", "else", "while", "until", "case", "when",
                        "in", "begin", "rescue", "ensure", "end", "return", "yield", "raise", "break", "next", "redo",
                        "retry", "do", "then", "private", "protected", "public", "require", "require_relative"}) {
    if (word == k) return false;
  }
  if (t.empty() || t[0] == '}' || t[0] == ')' || t[0] == ']' || t[0] == '.' || t[0] == '#' || t[0] == '=') return false;
  const char last = t.back();
  return last != '{' && last != '(' && last != '[' && last != ',' && last != '\\' && last != '|' && last != '+' &&
         last != '-' && last != '*' && last != '&' && last != '=' && last != '.' &&
         !(t.size() >= 3 && t.compare(t.size() - 3, 3, " do") == 0);
}

/// Ruby: the bodies of def blocks by indentation (up to the def's end), outside =begin/=end comments and
/// heredoc bodies.
std::vector<Mutation> ruby_mutations(const std::vector<std::string>& lines, bool repair) {
  std::vector<Mutation> out;
  int64_t def_indent = -1;
  bool block_comment = false;
  std::string heredoc;  // the terminator awaited
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string t = trim(lines[i]);
    if (block_comment) {
      block_comment = !starts(lines[i], "=end");
      continue;
    }
    if (starts(lines[i], "=begin")) {
      block_comment = true;
      continue;
    }
    if (!heredoc.empty()) {
      if (t == heredoc) heredoc.clear();
      continue;
    }
    if (starts(t, "__END__")) break;
    if (t.empty()) continue;
    const int64_t ind = static_cast<int64_t>(indent_of(lines[i]));
    if (def_indent >= 0 && ind <= def_indent) def_indent = -1;
    const std::vector<bool> ok = code_mask(lines[i], true);
    // a heredoc opened on this line (<<~WORD, <<-WORD, <<WORD, quotes allowed): its body is text
    for (size_t at = find_code(lines[i], ok, "<<"); at != std::string::npos; at = find_code(lines[i], ok, "<<", at + 2)) {
      size_t k = at + 2;
      if (k < lines[i].size() && (lines[i][k] == '~' || lines[i][k] == '-')) ++k;
      if (k < lines[i].size() && (lines[i][k] == '\'' || lines[i][k] == '"')) ++k;
      std::string word;
      while (k < lines[i].size() && (std::isupper(static_cast<unsigned char>(lines[i][k])) || lines[i][k] == '_'))
        word += lines[i][k++];
      if (!word.empty()) {
        heredoc = word;
        break;
      }
    }
    if (starts(t, "def ")) {
      if (def_indent < 0) def_indent = ind;
      continue;
    }
    if (def_indent < 0 || starts(t, "#") || !heredoc.empty()) continue;
    bool removable = false;
    if (ruby_statement(t)) {
      for (size_t k = i; k-- > 0;) {
        const std::string pt = trim(lines[k]);
        if (pt.empty()) continue;
        removable = static_cast<int64_t>(indent_of(lines[k])) == ind && ruby_statement(pt);
        break;
      }
    }
    mutations_of_line(lines[i], static_cast<int64_t>(i), true, removable, repair, out);
  }
  return out;
}

}  // namespace

std::vector<Mutation> candidate_mutations(const std::string& source, const std::string& language, bool repair) {
  const std::vector<std::string> lines = split_lines(source);
  std::vector<Mutation> out;
  if (language == "ruby") return ruby_mutations(lines, repair);
  const bool python = language == "python";
  if (python) {
    // the bodies of def blocks: deeper than the def, until a line at its indent or less
    int64_t def_indent = -1;
    bool docstring = false;
    for (size_t i = 0; i < lines.size(); ++i) {
      const std::string t = trim(lines[i]);
      const int64_t ind = static_cast<int64_t>(indent_of(lines[i]));
      const size_t quotes = t.find("\"\"\"") != std::string::npos ? t.find("\"\"\"") : t.find("'''");
      if (docstring) {
        if (quotes != std::string::npos) docstring = false;
        continue;
      }
      if (t.empty()) continue;
      if (def_indent >= 0 && ind <= def_indent) def_indent = -1;
      if (starts(t, "def ") || starts(t, "async def ")) {
        def_indent = ind;
        continue;
      }
      if (quotes != std::string::npos) {
        // a docstring opening (and maybe closing) on this line
        const std::string rest = t.substr(quotes + 3);
        if (rest.find("\"\"\"") == std::string::npos && rest.find("'''") == std::string::npos) docstring = true;
        continue;
      }
      if (def_indent < 0 || starts(t, "#")) continue;
      // removable when another statement of the same block precedes it
      bool removable = false;
      if (python_statement(t)) {
        for (size_t k = i; k-- > 0;) {
          const std::string pt = trim(lines[k]);
          if (pt.empty()) continue;
          removable = static_cast<int64_t>(indent_of(lines[k])) == ind && pt.back() != ':';
          break;
        }
      }
      mutations_of_line(lines[i], static_cast<int64_t>(i), true, removable, repair, out);
    }
    return out;
  }
  // languages with braces: lines inside a function (a block opened by a header with a parameter list, Perl's
  // "sub NAME" or PHP's "function NAME(...): type"); Perl's comments start with '#', its POD (=head1 ... =cut) is
  // documentation; PHP's heredocs (<<<END ... END) are text
  const bool perl = language == "perl", php = language == "php";
  int depth = 0, function_depth = -1;
  bool block_comment = false, pod = false;
  std::string heredoc_end;
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string t = trim(lines[i]);
    if (!heredoc_end.empty()) {
      if (starts(t, heredoc_end.c_str())) heredoc_end.clear();
      continue;
    }
    if (perl && (pod || (!lines[i].empty() && lines[i][0] == '=' && lines[i].size() > 1 &&
                         std::isalpha(static_cast<unsigned char>(lines[i][1]))))) {
      pod = !starts(lines[i], "=cut");
      continue;
    }
    if (perl && (starts(t, "__END__") || starts(t, "__DATA__"))) break;
    if (block_comment) {
      if (t.find("*/") != std::string::npos) block_comment = false;
      continue;
    }
    if (starts(t, "/*")) {
      if (t.find("*/") == std::string::npos) block_comment = true;
      continue;
    }
    const std::vector<bool> ok = code_mask(lines[i], perl);
    const bool inside = function_depth >= 0 && depth > function_depth;
    const size_t heredoc = php ? find_code(lines[i], ok, "<<<") : std::string::npos;
    if (heredoc != std::string::npos) {
      // the terminator: the identifier after <<<, without its quotes (nowdoc: <<<'END')
      std::string id = trim(lines[i].substr(heredoc + 3));
      id.erase(std::remove_if(id.begin(), id.end(), [](char c) { return c == '\'' || c == '"'; }), id.end());
      size_t n = 0;
      while (n < id.size() && ident(id[n])) ++n;
      heredoc_end = id.substr(0, n);
      continue;  // the line that opens it is left alone too
    }
    if (inside && !t.empty() && !starts(t, "//") && !starts(t, "#") && t != "{" && t != "}")
      mutations_of_line(lines[i], static_cast<int64_t>(i), perl, brace_statement(t), repair, out);
    for (size_t k = 0; k < lines[i].size(); ++k) {
      if (!ok[k]) continue;
      if (lines[i][k] == '{') {
        if (function_depth < 0) {
          std::string head = trim(lines[i].substr(0, k));
          if (head.empty()) {
            // the brace on a line of its own (C's usual style): the signature is on the lines before it, up to
            // the end of the previous statement, block, preprocessor line or blank line
            for (size_t back = i, n = 0; back-- > 0 && n < 8; ++n) {
              const std::string prev = trim(lines[back]);
              if (prev.empty() || prev[0] == '#' || prev.back() == ';' || prev.back() == '}' || prev.back() == '{' ||
                  starts(prev, "//") || starts(prev, "*") || starts(prev, "/*"))
                break;
              head = head.empty() ? prev : prev + " " + head;
            }
          }
          const bool control = starts(head, "if") || starts(head, "for") || starts(head, "while") ||
                               starts(head, "switch") || starts(head, "else") || starts(head, "catch") ||
                               starts(head, "match") || starts(head, "} else");
          const bool perl_sub = perl && starts(head, "sub ") && head.find('=') == std::string::npos;
          const bool php_function =
              php && head.find("function") != std::string::npos && head.find('(') != std::string::npos;
          const bool header =
              perl_sub || php_function || (!control && head.find('(') != std::string::npos &&
                           (head.back() == ')' || head.find("->") != std::string::npos ||
                            head.find(") const") != std::string::npos));
          if (header) function_depth = depth;
        }
        ++depth;
      } else if (lines[i][k] == '}') {
        --depth;
        if (function_depth >= 0 && depth <= function_depth) function_depth = -1;
      }
    }
  }
  return out;
}

std::string apply_mutation(const std::string& source, const Mutation& m) {
  std::string out;
  std::istringstream in(source);
  std::string line;
  int64_t n = 0;
  while (std::getline(in, line)) {
    if (n == m.line) {
      if (!m.removes) out += m.after + "\n";
    } else {
      out += line + "\n";
    }
    ++n;
  }
  if (!source.empty() && source.back() != '\n' && !out.empty()) out.pop_back();
  return out;
}

}  // namespace swec
