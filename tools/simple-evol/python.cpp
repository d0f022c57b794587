// python.cpp - embedded CPython and numpy for the heuristic calls.
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>

#include <cmath>
#include <cstdlib>
#include <cstring>

#include "nk/error.hpp"
#include "nk/timer.hpp"
#include "simple-evol/python.hpp"

#if defined(__SANITIZE_ADDRESS__)
// The embedded interpreter is never finalised (a finalised numpy cannot be
// imported again) and keeps its objects to the end: not leaks of ours.
extern "C" const char* __lsan_default_suppressions() {
  return "leak:libpython3\nleak:_multiarray_umath\nleak:libcrypto\nleak:libssl\nleak:libopenblas\n"
         "leak:libblas\nleak:liblapack\nleak:libffi\nleak:libexpat\nleak:libz\n";
}
#endif

namespace sevol::py {

namespace {

/// A new reference, released on scope exit.
class Ref {
 public:
  Ref() = default;
  explicit Ref(PyObject* o) : o_(o) {}
  Ref(const Ref&) = delete;
  Ref& operator=(const Ref&) = delete;
  Ref(Ref&& r) noexcept : o_(r.o_) { r.o_ = nullptr; }
  Ref& operator=(Ref&& r) noexcept {
    std::swap(o_, r.o_);
    return *this;
  }
  ~Ref() { Py_XDECREF(o_); }
  PyObject* get() const { return o_; }
  PyObject* release() {
    PyObject* o = o_;
    o_ = nullptr;
    return o;
  }
  explicit operator bool() const { return o_ != nullptr; }

 private:
  PyObject* o_ = nullptr;
};

bool g_started = false;

int init_numpy() {
  import_array1(-1);
  return 0;
}

/// The pending Python exception as text (its last traceback lines), cleared.
std::string fetch_error() {
  PyObject *type = nullptr, *value = nullptr, *tb = nullptr;
  PyErr_Fetch(&type, &value, &tb);
  PyErr_NormalizeException(&type, &value, &tb);
  Ref t(type), v(value), b(tb);
  std::string text = "unknown error";
  Ref mod(PyImport_ImportModule("traceback"));
  if (mod && t) {
    Ref lines(PyObject_CallMethod(mod.get(), "format_exception", "OOO", t.get(), v ? v.get() : Py_None,
                                  b ? b.get() : Py_None));
    if (lines) {
      Ref sep(PyUnicode_FromString(""));
      Ref joined(PyUnicode_Join(sep.get(), lines.get()));
      if (joined) {
        const char* s = PyUnicode_AsUTF8(joined.get());
        if (s) text = s;
      }
    }
  }
  PyErr_Clear();
  // keep the end: the exception and the heuristic's own frames
  while (!text.empty() && text.back() == '\n') text.pop_back();
  if (text.size() > 1500) text = "..." + text.substr(text.size() - 1500);
  return text;
}

[[noreturn]] void raise_exception() {
  throw HeuristicFailure(1, fetch_error());
}

Ref array_copy(const double* data, std::initializer_list<npy_intp> shape) {
  std::vector<npy_intp> dims(shape);
  PyObject* a = PyArray_SimpleNew(static_cast<int>(dims.size()), dims.data(), NPY_FLOAT64);
  if (!a) raise_exception();
  size_t count = 1;
  for (npy_intp d : dims) count *= static_cast<size_t>(d);
  std::memcpy(PyArray_DATA(reinterpret_cast<PyArrayObject*>(a)), data, count * sizeof(double));
  return Ref(a);
}

Ref int_array(const std::vector<int64_t>& values) {
  npy_intp dims[1] = {static_cast<npy_intp>(values.size())};
  PyObject* a = PyArray_SimpleNew(1, dims, NPY_INT64);
  if (!a) raise_exception();
  if (!values.empty()) std::memcpy(PyArray_DATA(reinterpret_cast<PyArrayObject*>(a)), values.data(), values.size() * 8);
  return Ref(a);
}

/// An integer answer: a Python or numpy integer, or an integral float.
bool as_integer(PyObject* o, int64_t& out) {
  if (PyBool_Check(o)) return false;
  Ref idx(PyNumber_Index(o));
  if (idx) {
    int overflow = 0;
    out = PyLong_AsLongLongAndOverflow(idx.get(), &overflow);
    if (overflow || (out == -1 && PyErr_Occurred())) {
      PyErr_Clear();
      return false;
    }
    return true;
  }
  PyErr_Clear();
  if (PyFloat_Check(o) || PyArray_IsScalar(o, Floating)) {
    const double v = PyFloat_AsDouble(o);
    if (PyErr_Occurred()) {
      PyErr_Clear();
      return false;
    }
    if (std::isfinite(v) && v == std::floor(v) && std::fabs(v) < 9e15) {
      out = static_cast<int64_t>(v);
      return true;
    }
  }
  return false;
}

std::string describe(PyObject* o) {
  Ref r(PyObject_Repr(o));
  std::string s = r ? PyUnicode_AsUTF8(r.get()) : "?";
  PyErr_Clear();
  if (s.size() > 80) s = s.substr(0, 77) + "...";
  return s + " (" + Py_TYPE(o)->tp_name + ")";
}

/// A float64 C-contiguous array of exactly 'rows' x 'cols' from any array-like.
std::vector<double> as_matrix(PyObject* o, int64_t rows, int64_t cols, const std::string& what) {
  Ref arr(PyArray_FROMANY(o, NPY_FLOAT64, 0, 0, NPY_ARRAY_C_CONTIGUOUS | NPY_ARRAY_ALIGNED | NPY_ARRAY_FORCECAST));
  if (!arr) {
    const std::string e = fetch_error();
    throw HeuristicFailure(3, what + " is not a numeric array: " + e);
  }
  auto* a = reinterpret_cast<PyArrayObject*>(arr.get());
  if (PyArray_NDIM(a) != 2 || PyArray_DIM(a, 0) != rows || PyArray_DIM(a, 1) != cols) {
    std::string shape = "[";
    for (int i = 0; i < PyArray_NDIM(a); ++i) {
      if (i) shape += ",";
      shape += std::to_string(PyArray_DIM(a, i));
    }
    throw HeuristicFailure(
        3, what + " has shape " + shape + "], expected [" + std::to_string(rows) + "," + std::to_string(cols) + "]");
  }
  const double* d = static_cast<const double*>(PyArray_DATA(a));
  std::vector<double> out(d, d + rows * cols);
  for (size_t i = 0; i < out.size(); ++i) {
    if (!std::isfinite(out[i])) {
      throw HeuristicFailure(
          3, what + " holds a non-finite value at [" + std::to_string(i / cols) + "," + std::to_string(i % cols) + "]");
    }
  }
  return out;
}

}  // namespace

void start() {
  if (g_started) return;
  // one BLAS thread: the zygote must stay single-threaded to fork safely
  for (const char* v : {"OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS"}) {
    setenv(v, "1", 1);
  }
  setenv("PYTHONDONTWRITEBYTECODE", "1", 1);
  Py_InitializeEx(0);  // no signal handlers: the tool's own stay
  if (!Py_IsInitialized()) throw nk::Error(nk::Exit::runtime, "cannot start the embedded Python interpreter");
  if (init_numpy() < 0) {
    const std::string e = fetch_error();
    throw nk::Error(nk::Exit::runtime, "the embedded Python cannot import numpy (install python3-numpy): " + e);
  }
  g_started = true;
}

void set_scratch(const std::string& folder) {
  Ref os(PyImport_ImportModule("os"));
  if (!os) {
    PyErr_Clear();
    return;
  }
  Ref environ(PyObject_GetAttrString(os.get(), "environ"));
  if (!environ) {
    PyErr_Clear();
    return;
  }
  Ref value(PyUnicode_FromString(folder.c_str()));
  PyObject_SetItem(environ.get(), Ref(PyUnicode_FromString("TMPDIR")).get(), value.get());
  PyObject_SetItem(environ.get(), Ref(PyUnicode_FromString("HOME")).get(), value.get());
  PyErr_Clear();
  Ref tempfile(PyImport_ImportModule("tempfile"));
  if (tempfile) PyObject_SetAttrString(tempfile.get(), "tempdir", value.get());
  PyErr_Clear();
}

struct Heuristic::State {
  Ref module, function, dist;
  int64_t n = 0;
};

Heuristic::Heuristic(const std::string& code, const std::string& function) : state_(std::make_unique<State>()) {
  Ref compiled(Py_CompileString(code.c_str(), "heuristic.py", Py_file_input));
  if (!compiled) raise_exception();
  PyObject* module = PyModule_New("heuristic");
  if (!module) raise_exception();
  state_->module = Ref(module);
  PyObject* globals = PyModule_GetDict(module);
  PyDict_SetItemString(globals, "__builtins__", PyEval_GetBuiltins());
  PyObject* modules = PyImport_GetModuleDict();
  PyDict_SetItemString(modules, "heuristic", module);
  Ref result(PyEval_EvalCode(compiled.get(), globals, globals));
  if (!result) raise_exception();
  PyObject* fn = PyDict_GetItemString(globals, function.c_str());  // borrowed
  if (!fn || !PyCallable_Check(fn)) {
    // ReEvo names its versions select_next_node_v1, _v2, ...: take the last defined
    fn = nullptr;
    PyObject *key = nullptr, *value = nullptr;
    Py_ssize_t pos = 0;
    while (PyDict_Next(globals, &pos, &key, &value)) {
      const char* name = PyUnicode_Check(key) ? PyUnicode_AsUTF8(key) : nullptr;
      if (name && std::strncmp(name, function.c_str(), function.size()) == 0 && name[function.size()] == '_' &&
          PyCallable_Check(value)) {
        fn = value;
      }
    }
  }
  if (!fn) throw HeuristicFailure(1, "the code defines no function '" + function + "'");
  Py_INCREF(fn);
  state_->function = Ref(fn);
}

Heuristic::~Heuristic() = default;

void Heuristic::set_distance_matrix(const std::vector<double>& dist, int64_t n) {
  state_->n = n;
  state_->dist = array_copy(dist.data(), {n, n});
  if (!copy_per_call_) PyArray_CLEARFLAGS(reinterpret_cast<PyArrayObject*>(state_->dist.get()), NPY_ARRAY_WRITEABLE);
}

int64_t Heuristic::select_next_node(int64_t current, int64_t destination, const std::vector<int64_t>& unvisited,
                                    const std::vector<double>& dist, int64_t n) {
  if (copy_per_call_) {
    std::memcpy(PyArray_DATA(reinterpret_cast<PyArrayObject*>(state_->dist.get())), dist.data(),
                static_cast<size_t>(n * n) * sizeof(double));
  }
  Ref un = int_array(unvisited);
  Ref cur(PyLong_FromLongLong(current)), dest(PyLong_FromLongLong(destination));
  nk::Stopwatch clock;
  Ref result(PyObject_CallFunctionObjArgs(state_->function.get(), cur.get(), dest.get(), un.get(), state_->dist.get(),
                                          nullptr));
  seconds_ += clock.seconds();
  if (!result) raise_exception();
  int64_t next = 0;
  if (!as_integer(result.get(), next)) {
    throw HeuristicFailure(3, "select_next_node returned " + describe(result.get()) + ", not a node index");
  }
  return next;
}

std::vector<double> Heuristic::heuristics(const std::vector<double>& dist, const std::vector<double>& coords,
                                          const std::vector<double>& demand, int64_t capacity) {
  const int64_t n = static_cast<int64_t>(demand.size());
  Ref d = array_copy(dist.data(), {n, n});
  Ref c = array_copy(coords.data(), {n, 2});
  Ref q = array_copy(demand.data(), {n});
  Ref cap(PyLong_FromLongLong(capacity));
  nk::Stopwatch clock;
  Ref result(PyObject_CallFunctionObjArgs(state_->function.get(), d.get(), c.get(), q.get(), cap.get(), nullptr));
  seconds_ += clock.seconds();
  if (!result) raise_exception();
  return as_matrix(result.get(), n, n, "the heuristic matrix");
}

void Heuristic::get_matrix_and_jobs(const std::vector<int64_t>& seq, const std::vector<double>& p, int64_t n, int64_t m,
                                    std::vector<double>& matrix, std::vector<int64_t>& jobs) {
  Ref list(PyList_New(static_cast<Py_ssize_t>(seq.size())));
  for (size_t i = 0; i < seq.size(); ++i)
    PyList_SET_ITEM(list.get(), static_cast<Py_ssize_t>(i), PyLong_FromLongLong(seq[i]));
  Ref tm = array_copy(p.data(), {n, m});
  Ref mm(PyLong_FromLongLong(m)), nn(PyLong_FromLongLong(n));
  nk::Stopwatch clock;
  Ref result(PyObject_CallFunctionObjArgs(state_->function.get(), list.get(), tm.get(), mm.get(), nn.get(), nullptr));
  seconds_ += clock.seconds();
  if (!result) raise_exception();
  if (!PySequence_Check(result.get()) || PySequence_Size(result.get()) != 2) {
    PyErr_Clear();
    throw HeuristicFailure(3, "get_matrix_and_jobs returned " + describe(result.get()) + ", not (matrix, jobs)");
  }
  Ref first(PySequence_GetItem(result.get(), 0)), second(PySequence_GetItem(result.get(), 1));
  if (!first || !second) raise_exception();
  matrix = as_matrix(first.get(), n, m, "the perturbed matrix");
  Ref fast(PySequence_Fast(second.get(), "jobs must be a sequence"));
  if (!fast) throw HeuristicFailure(3, "the job list is " + describe(second.get()) + ", not a sequence");
  jobs.clear();
  const Py_ssize_t count = PySequence_Fast_GET_SIZE(fast.get());
  for (Py_ssize_t i = 0; i < count; ++i) {
    int64_t j = 0;
    PyObject* item = PySequence_Fast_GET_ITEM(fast.get(), i);
    if (!as_integer(item, j))
      throw HeuristicFailure(3, "job list entry " + std::to_string(i) + " is " + describe(item));
    jobs.push_back(j);
  }
}

bool is_read_only_write(const HeuristicFailure& failure) {
  const std::string w = failure.what();
  return failure.status() == 1 && w.find("read-only") != std::string::npos;
}

}  // namespace sevol::py
