// swe-crafter.cpp - the test-file rule and each log parser on recorded logs.
#include "doctest/doctest.h"
#include "swe-crafter/buildsys.hpp"
#include "swe-crafter/parsers.hpp"
#include "swe-crafter/skills.hpp"
#include "swe-crafter/sources.hpp"
#include "swe-crafter/swe_crafter.hpp"
#include "swe-crafter/synthetic.hpp"
#include "swe-crafter/testrule.hpp"
#include "swe-crafter/workspace.hpp"

#include <algorithm>
#include <fstream>
#include <sstream>

#include "swe-crafter/git.hpp"

using namespace swec;

namespace {
std::string slurp(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}
size_t lines(const std::string& path) {
  const std::string t = slurp(path);
  return static_cast<size_t>(std::count(t.begin(), t.end(), '\n'));
}
}  // namespace

TEST_SUITE("swe-crafter") {
  TEST_CASE("the test-file rule, code against documentation, languages") {
    for (const char* t :
         {"tests/test_calc.py", "test/foo.c", "pkg/t/basic.t", "spec/models/user_spec.rb", "src/__tests__/a.js",
          "test_x.py", "math_test.go", "lib/a_spec.js", "src/test/java/FooTest.java", "x/y/tests/data.json"}) {
      CHECK_MESSAGE(is_test_file(t), t);
    }
    for (const char* t : {"calc.py", "src/testing.c", "contest.py", "latest/a.go", "docs/tests.md.txt", "t.py",
                          "attest/x.rs", "Testament.java"}) {
      CHECK_MESSAGE(!is_test_file(t), t);
    }
    CHECK(is_code_file("src/lib.rs"));
    CHECK(is_code_file("Makefile"));
    CHECK(is_code_file("cmake/Foo.cmake"));
    CHECK_FALSE(is_code_file("README.md"));
    CHECK_FALSE(is_code_file("LICENSE"));
    CHECK_FALSE(is_code_file("docs/index.rst"));
    CHECK(language_of("a/b.go") == "go");
    CHECK(language_of("x.hpp") == "cpp");
    CHECK(language_of("lib/A.pm") == "perl");
    CHECK(language_of("notes.txt") == "");
    for (const char* b : {"Makefile", "src/Makefile.am", "configure.ac", "CMakeLists.txt", "cmake/deps.cmake",
                          "setup.py", "pyproject.toml", "Cargo.toml", "go.mod", "package.json", "foo.gemspec",
                          "Makefile.PL", "requirements-dev.txt", "config.h.in"}) {
      CHECK_MESSAGE(is_build_description(b), b);
    }
    for (const char* b : {"src/main.c", "lib/Foo.pm", "calc.py", "README.md", "src/lib.rs", "tests/test_a.py"}) {
      CHECK_MESSAGE(!is_build_description(b), b);
    }
  }

  TEST_CASE("a prepared workspace: install and build once, each state rebuilds only what it changes") {
    ScratchFolder tmp("nk-unit-ws");
    const std::string repo = tmp.path + "/repo";
    const std::string id = "git -c user.name=t -c user.email=t@example.org ";
    auto sh = [&](const std::string& command) {
      const CommandResult r = shell(command, repo);
      INFO(command, ": ", r.output);
      REQUIRE(r.exit_code == 0);
      return r.output;
    };
    REQUIRE(shell("git init -q " + sh_quote(repo), ".").exit_code == 0);
    {
      std::ofstream m(repo + "/Makefile");
      m << "out.txt: a.txt\n\tcat a.txt > out.txt\n\techo built >> ../builds\n";
      std::ofstream a(repo + "/a.txt");
      a << "one\n";
    }
    sh(id + "add -A && " + id + "commit -q -m one");
    const std::string c1 = sh("git rev-parse HEAD").substr(0, 40);
    sh("echo two > a.txt && " + id + "commit -q -am two");
    const std::string c2 = sh("git rev-parse HEAD").substr(0, 40);
    Environment env;
    env.install = "echo installed >> ../installs";
    env.build = "make";
    Sandbox sandbox;
    sandbox.mode = nk::SandboxMode::none;
    sandbox.timeout = 60;
    PreparedWorkspace ws(repo, c1, env, sandbox);
    REQUIRE(ws.error().empty());
    const std::string modify = "diff --git a/a.txt b/a.txt\n--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-one\n+three\n";
    const std::string add = "diff --git a/b.txt b/b.txt\nnew file mode 100644\n--- /dev/null\n+++ b/b.txt\n"
                            "@@ -0,0 +1 @@\n+bee\n";
    const std::string makefile = "diff --git a/Makefile b/Makefile\n--- a/Makefile\n+++ b/Makefile\n@@ -1,3 +1,3 @@\n"
                                 " out.txt: a.txt\n-\tcat a.txt > out.txt\n+\tcat a.txt a.txt > out.txt\n"
                                 " \techo built >> ../builds\n";
    const std::string run = ws.folder() + "/..";
    using R = PreparedWorkspace::Rebuild;
    std::string why;
    // an existing source changed: the build alone, which sees the change
    REQUIRE(ws.restore(c1).empty());
    CHECK(lines(run + "/installs") == 1);
    CHECK(lines(run + "/builds") == 1);
    REQUIRE(ws.apply(modify) == "");
    CHECK(ws.needs() == R::build);
    CHECK(ws.rebuild(R::build).exit_code == 0);
    CHECK(ws.run("cat out.txt").output == "three\n");
    CHECK(lines(run + "/installs") == 1);
    CHECK(lines(run + "/builds") == 2);
    // another commit: git rewrites what differs, from a fresh copy of the snapshot
    REQUIRE(ws.restore(c2).empty());
    CHECK(lines(run + "/builds") == 1);
    CHECK(ws.needs() == R::build);
    CHECK(ws.rebuild(R::build).exit_code == 0);
    CHECK(ws.run("cat out.txt").output == "two\n");
    // nothing changed: make has nothing to do
    REQUIRE(ws.restore(c1).empty());
    CHECK(ws.needs() == R::build);
    CHECK(ws.rebuild(R::build).exit_code == 0);
    CHECK(ws.run("cat out.txt").output == "one\n");
    CHECK(lines(run + "/builds") == 1);
    // a new data file: the build alone; a new source file: install and build again
    REQUIRE(ws.restore(c1).empty());
    REQUIRE(ws.apply(add).empty());
    CHECK(ws.needs() == R::build);
    const std::string add_code = "diff --git a/b.c b/b.c\nnew file mode 100644\n--- /dev/null\n+++ b/b.c\n"
                                 "@@ -0,0 +1 @@\n+int b;\n";
    REQUIRE(ws.restore(c1).empty());
    REQUIRE(ws.apply(add_code).empty());
    CHECK(ws.needs(&why) == R::prepare);
    CHECK(why == "b.c");
    CHECK(ws.rebuild(R::prepare).exit_code == 0);
    CHECK(lines(run + "/installs") == 2);
    // a changed makefile: make would not rebuild out.txt (it does not depend on the Makefile), a fresh build
    // would: only a build from scratch is right
    REQUIRE(ws.restore(c1).empty());
    REQUIRE(ws.apply(modify + makefile).empty());
    CHECK(ws.needs(&why) == R::scratch);
    CHECK(why == "Makefile");
    // a patch that does not apply says why; the snapshot is untouched
    REQUIRE(ws.restore(c1).empty());
    CHECK_FALSE(ws.apply(modify + modify).empty());
    REQUIRE(ws.restore(c1).empty());
    CHECK(slurp(ws.folder() + "/a.txt") == "one\n");
    CHECK(ws.clean_paths("at " + ws.folder() + "/a.txt") == "at ./a.txt");
  }

  TEST_CASE("pytest -rA: the short summary's verdicts and the final line") {
    const std::string log =
        "============================= test session starts ==============================\n"
        "collected 4 items\n\n"
        "tests/test_a.py .F.s                                                     [100%]\n"
        "=========================== short test summary info ============================\n"
        "PASSED tests/test_a.py::test_one\n"
        "PASSED tests/test_a.py::test_param[1-2]\n"
        "FAILED tests/test_a.py::test_two - assert 1 == 2\n"
        "SKIPPED [1] tests/test_a.py:9: no network\n"
        "ERROR tests/test_b.py - ImportError: cannot import name 'x'\n"
        "XFAIL tests/test_a.py::test_known - reason\n"
        "============== 1 failed, 2 passed, 1 skipped, 1 xfailed, 1 error in 0.05s ==============\n";
    const ParsedLog p = parse_log("pytest", log);
    CHECK(p.summary);
    CHECK(p.tests.size() == 5);
    CHECK(p.passed("tests/test_a.py::test_one"));
    CHECK(p.passed("tests/test_a.py::test_param[1-2]"));
    CHECK(p.tests.at("tests/test_a.py::test_two") == Verdict::failed);
    CHECK(p.tests.at("tests/test_b.py") == Verdict::error);
    CHECK(p.passed("tests/test_a.py::test_known"));  // XFAIL counts as passing, as SWE-bench counts it
    CHECK_FALSE(parse_log("pytest", "collected 0 items\nINTERNALERROR> boom\n").summary);
  }

  TEST_CASE("go test -v: tests, subtests, and the package lines") {
    const std::string log =
        "=== RUN   TestAdd\n--- PASS: TestAdd (0.00s)\n=== RUN   TestSub\n=== RUN   TestSub/neg\n"
        "    --- FAIL: TestSub/neg (0.00s)\n--- FAIL: TestSub (0.00s)\n--- SKIP: TestNet (0.00s)\nFAIL\n"
        "FAIL\texample.com/calc\t0.004s\n";
    const ParsedLog p = parse_log("gotest", log);
    CHECK(p.summary);
    CHECK(p.passed("TestAdd"));
    CHECK(p.tests.at("TestSub/neg") == Verdict::failed);
    CHECK(p.tests.at("TestSub") == Verdict::failed);
    CHECK(p.tests.at("TestNet") == Verdict::skipped);
    CHECK(parse_log("gotest", "ok  \texample.com/calc\t0.003s\n").summary);
  }

  TEST_CASE("cargo test, TAP from prove -v, ctest, automake") {
    const ParsedLog c =
        parse_log("cargo",
                  "running 3 tests\ntest tests::adds ... ok\ntest tests::subs ... FAILED\n"
                  "test tests::slow ... ignored\n\ntest result: FAILED. 1 passed; 1 failed; 1 ignored\n");
    CHECK(c.summary);
    CHECK(c.passed("tests::adds"));
    CHECK(c.tests.at("tests::subs") == Verdict::failed);
    CHECK(c.tests.at("tests::slow") == Verdict::skipped);

    const ParsedLog t = parse_log("tap",
                                  "t/basic.t .. \n1..3\nok 1 - adds\nnot ok 2 - subs\nok 3 # skip no network\n"
                                  "Failed 1/3 subtests\nt/more.t ... ok 1 - more\nok\n"
                                  "Files=2, Tests=4,  0 wallclock secs\nResult: FAIL\n");
    CHECK(t.summary);
    CHECK(t.passed("t/basic.t::adds"));
    CHECK(t.tests.at("t/basic.t::subs") == Verdict::failed);
    CHECK(t.tests.at("t/basic.t::3") == Verdict::skipped);
    CHECK(t.passed("t/more.t::more"));

    const ParsedLog k = parse_log("ctest",
                                  "    Start 1: unit_add\n1/3 Test #1: unit_add .........................   Passed    "
                                  "0.01 sec\n2/3 Test #2: unit_sub .........................***Failed    0.01 sec\n"
                                  "3/3 Test #3: unit_net .........................***Not Run   0.00 sec\n\n"
                                  "67% tests passed, 1 tests failed out of 3\n");
    CHECK(k.summary);
    CHECK(k.passed("unit_add"));
    CHECK(k.tests.at("unit_sub") == Verdict::failed);
    CHECK(k.tests.at("unit_net") == Verdict::skipped);

    const ParsedLog a = parse_log("automake", "PASS: t1\nFAIL: t2\nXFAIL: t3\nSKIP: t4\nERROR: t5\n# TOTAL: 5\n");
    CHECK(a.summary);
    CHECK(a.passed("t1"));
    CHECK(a.passed("t3"));
    CHECK(a.tests.at("t2") == Verdict::failed);
    CHECK(a.tests.at("t5") == Verdict::error);
    CHECK_THROWS(parse_log("junit-xml", ""));
  }

  TEST_CASE("tape (tests by heading), mocha's TAP, minitest -v, rspec's JSON, test-unit -v, phpunit --teamcity") {
    // tape: assertion messages repeat across tests; a test fails when one of its assertions fails
    const ParsedLog tape = parse_log("tape",
                                     "TAP version 13\n# adds\nok 1 should be strictly equal\nok 2 should be strictly "
                                     "equal\n# subs\nok 3 should be strictly equal\nnot ok 4 should be equal\n  ---\n"
                                     "    operator: equal\n  ...\n# todo later\nnot ok 5 soon # TODO\n\n1..5\n"
                                     "# tests 5\n# pass  3\n# fail  1\n");
    CHECK(tape.summary);
    CHECK(tape.passed("adds"));
    CHECK(tape.tests.at("subs") == Verdict::failed);
    CHECK(tape.passed("todo later"));
    CHECK(tape.tests.size() == 3);
    CHECK_FALSE(parse_log("tape", "# adds\nok 1 equal\n").summary);  // died before its plan

    const ParsedLog mocha = parse_log("tap",
                                      "ok 1 calc adds\nnot ok 2 calc subs\n  0 == 1\n  AssertionError\n# tests 2\n"
                                      "# pass 1\n# fail 1\n1..2\n");
    CHECK(mocha.summary);
    CHECK(mocha.passed("calc adds"));
    CHECK(mocha.tests.at("calc subs") == Verdict::failed);

    const ParsedLog mt = parse_log("minitest",
                                   "Run options: -v --seed 6599\n\n# Running:\n\nTestCalc#test_adds = 0.00 s = .\n"
                                   "TestCalc#test_subs = 0.00 s = F\nTestCalc#test_skip = 0.00 s = S\n"
                                   "Calc::Spec#test_0001_adds two numbers = 0.01 s = E\n\n  1) Failure:\n"
                                   "TestCalc#test_subs [test/test_calc.rb:4]:\nExpected: 1\n\n"
                                   "4 runs, 2 assertions, 1 failures, 1 errors, 1 skips\n");
    CHECK(mt.summary);
    CHECK(mt.passed("TestCalc#test_adds"));
    CHECK(mt.tests.at("TestCalc#test_subs") == Verdict::failed);
    CHECK(mt.tests.at("TestCalc#test_skip") == Verdict::skipped);
    CHECK(mt.tests.at("Calc::Spec#test_0001_adds two numbers") == Verdict::error);
    CHECK(mt.tests.size() == 4);

    const ParsedLog rs = parse_log(
        "rspec-json",
        "Run options: exclude {:slow=>true}\n{\"version\":\"3.12.0\",\"examples\":[{\"id\":\"./spec/a_spec.rb[1:1]\","
        "\"full_description\":\"Calc adds\",\"status\":\"passed\",\"file_path\":\"./spec/a_spec.rb\"},"
        "{\"full_description\":\"Calc subs\",\"status\":\"failed\",\"file_path\":\"./spec/a_spec.rb\"},"
        "{\"full_description\":\"Calc later\",\"status\":\"pending\",\"file_path\":\"./spec/a_spec.rb\"}],"
        "\"summary\":{\"example_count\":3,\"failure_count\":1},\"summary_line\":\"3 examples, 1 failure\"}\n");
    CHECK(rs.summary);
    CHECK(rs.passed("spec/a_spec.rb::Calc adds"));
    CHECK(rs.tests.at("spec/a_spec.rb::Calc subs") == Verdict::failed);
    CHECK(rs.tests.at("spec/a_spec.rb::Calc later") == Verdict::skipped);
    CHECK_FALSE(parse_log("rspec-json", "{\"version\":\"3.12.0\",\"examples\":[{\"full_desc").summary);

    const ParsedLog tu = parse_log(
        "test-unit",
        "Loaded suite -e\nStarted\nTestFoo: \n  test_a:\t\t\t\t\t\t.: (0.000216)\n  test_b:\t\t\t\t\t\tF\n"
        "=====\nFailure: test_b(TestFoo)\n/tmp/t.rb:4:in `test_b'\n  => 4:   def test_b; end\n=====\n: (0.007551)\n"
        "  test_c:\t\t\t\t\t\tO\n=====\nOmission: later [test_c(TestFoo)]\n=====\n: (0.0004)\n"
        "  test_d:\t\t\t\t\t\tE\n: (0.0006)\n  inner: \n    test: spaced name:\t\t\t\t\t.: (0.000158)\n"
        "TestBar: \n  test_a:\t\t\t\t\t\t.: (0.0001)\n\nFinished in 0.0095 seconds.\n"
        "6 tests, 4 assertions, 1 failures, 1 errors, 0 pendings, 1 omissions, 0 notifications\n50% passed\n");
    CHECK(tu.summary);
    CHECK(tu.passed("TestFoo#test_a"));
    CHECK(tu.tests.at("TestFoo#test_b") == Verdict::failed);
    CHECK(tu.tests.at("TestFoo#test_c") == Verdict::skipped);
    CHECK(tu.tests.at("TestFoo#test_d") == Verdict::error);
    CHECK(tu.passed("TestFoo::inner#test: spaced name"));
    CHECK(tu.passed("TestBar#test_a"));
    CHECK(tu.tests.size() == 6);

    // phpunit --teamcity (recorded from php-parsedown with a bug, names shortened); the id is the class's and
    // the method's, never the workspace's path
    const std::string started = "##teamcity[testStarted name='test_ with data set #0' locationHint='php_qn:///tmp/"
                                "ws/test/ParsedownTest.php::\\ParsedownTest::test_ with data set #0' flowId='3']\n";
    const ParsedLog pu = parse_log(
        "phpunit",
        "PHPUnit 9.6.7 by Sebastian Bergmann and contributors.\n\n##teamcity[testCount count='4' flowId='3']\n" +
            started + "\n##teamcity[testFinished name='test_ with data set #0' duration='1' flowId='3']\n" +
            "##teamcity[testStarted name='test_ with data set #6' locationHint='php_qn:///tmp/ws/test/"
            "ParsedownTest.php::\\ParsedownTest::test_ with data set #6' flowId='3']\n"
            "##teamcity[testFailed name='test_ with data set #6' message='Failed asserting that two strings are "
            "equal.' details=' /tmp/ws/test/ParsedownTest.php:57|n ' actual='|'<p>|'' expected='|'it|'s|'']\n"
            "##teamcity[testFinished name='test_ with data set #6' duration='0' flowId='3']\n"
            "##teamcity[testStarted name='testLater' locationHint='php_qn:///tmp/ws/test/ATest.php::\\Ns\\ATest::"
            "testLater' flowId='3']\n##teamcity[testIgnored name='testLater' message='later' flowId='3']\n"
            "##teamcity[testFinished name='testLater' duration='0' flowId='3']\n"
            "##teamcity[testStarted name='testQuote|'s' locationHint='php_qn:///tmp/ws/test/ATest.php::\\Ns\\ATest::"
            "testQuote|'s' flowId='3']\n##teamcity[testFinished name='testQuote|'s' duration='0' flowId='3']\n\n"
            "FAILURES!\nTests: 4, Assertions: 4, Failures: 1, Skipped: 1.\n");
    CHECK(pu.summary);
    CHECK(pu.passed("ParsedownTest::test_ with data set #0"));
    CHECK(pu.tests.at("ParsedownTest::test_ with data set #6") == Verdict::failed);
    CHECK(pu.tests.at("Ns\\ATest::testLater") == Verdict::skipped);
    CHECK(pu.passed("Ns\\ATest::testQuote's"));
    CHECK(pu.tests.size() == 4);
    CHECK(parse_log("phpunit", "PHPUnit 9.6.7\n\nOK (3 tests, 3 assertions)\n").summary);
    CHECK_FALSE(parse_log("phpunit", "PHP Fatal error:  Uncaught Error: Class \"A\" not found\n" + started).summary);
  }

  TEST_CASE("the test command narrows to the test files where the runner can (ctest by their names)") {
    Environment py{"python", "pytest", "", "", "python3 -m pytest -rA", "pytest", {}};
    CHECK(test_command(py, {"tests/test_a.py", "tests/data.json"}, false) == "python3 -m pytest -rA 'tests/test_a.py'");
    CHECK(test_command(py, {"tests/test_a.py"}, true) == "python3 -m pytest -rA");
    Environment go{"go", "go", "", "", "go test -count=1 -v ./...", "gotest", {}};
    CHECK(test_command(go, {"pkg/a_test.go", "pkg/b_test.go", "main_test.go"}, false) ==
          "go test -count=1 -v '.' './pkg'");
    Environment cargo{"rust", "cargo", "", "", "cargo test --offline", "cargo", {}};
    CHECK(test_command(cargo, {"tests/it.rs"}, false) == "cargo test --offline");
    // ctest: the tests whose names hold the touched test files' stems, when any; else the whole suite
    Environment ct{"c", "cmake", "", "", "ctest --test-dir _b", "ctest", {}};
    CHECK(test_command(ct, {"tests/test_parse.c", "tests/cli/nk-data.sh", "tests/data.txt", "t/x.c"}, false) ==
          "if ctest --test-dir _b -N -R 'nk-data|parse' | grep -q 'Total Tests: [1-9]'; then ctest --test-dir _b -R "
          "'nk-data|parse'; else ctest --test-dir _b; fi");
    CHECK(test_command(ct, {"test/vec_unittest.cc"}, false).find("-R 'vec'") != std::string::npos);
    CHECK(test_command(ct, {"test/a.b_test.cpp"}, false).find("-R 'a\\.b'") != std::string::npos);
    CHECK(test_command(ct, {"tests/data.json"}, false) == "ctest --test-dir _b");
  }

  TEST_CASE("synthetic bugs: one line of a function mutated, never text in quotes or comments; reversible") {
    const std::string py =
        "import os\n"
        "LIMIT = 10\n"
        "\n"
        "def clamp(x, lo, hi):\n"
        "    \"\"\"Keep x within 1 + 2.\"\"\"\n"
        "    y = max(lo, x)  # a + b\n"
        "    y = min(hi, y)\n"
        "    if y == 3 and x < 4:\n"
        "        print(\"a + b\")\n"
        "    return y + 1\n";
    const std::vector<Mutation> m = candidate_mutations(py, "python");
    REQUIRE_FALSE(m.empty());
    for (const Mutation& x : m) {
      CHECK(x.line >= 5);  // inside clamp's body, after its docstring
      CHECK(x.before.find("LIMIT") == std::string::npos);
      if (!x.removes) CHECK(x.after.find("a - b") == std::string::npos);  // not in the comment or the string
    }
    auto has = [&](const char* kind, const char* after) {
      for (const Mutation& x : m) {
        if (x.kind == kind && (x.removes ? std::string() : x.after) == after) return true;
      }
      return false;
    };
    CHECK(has("swap-arguments", "    y = max(x, lo)  # a + b"));
    CHECK(has("operator", "    if y != 3 and x < 4:"));
    CHECK(has("off-by-one", "    if y == 3 and x <= 4:"));
    CHECK(has("constant", "    if y == 4 and x < 4:"));
    CHECK(has("operator", "    return y - 1"));
    CHECK(has("remove-statement", ""));  // y = min(hi, y): a second statement of its block
    for (const Mutation& x : m) {
      if (x.removes) CHECK((x.line == 5 || x.line == 6));
    }
    const Mutation& first = m.front();
    const std::string mutated = apply_mutation(py, first);
    CHECK(mutated != py);
    Mutation back = first;
    back.before = first.after;
    back.after = first.before;
    if (!first.removes) CHECK(apply_mutation(mutated, back) == py);

    const std::string c =
        "static int table[3] = {1, 2, 3};\n"
        "int sum(const int* v, int n) {\n"
        "  int s = 0;\n"
        "  for (int i = 0; i < n; ++i) {\n"
        "    s += v[i];\n"
        "  }\n"
        "  return s * 2;\n"
        "}\n";
    const std::vector<Mutation> mc = candidate_mutations(c, "c");
    REQUIRE_FALSE(mc.empty());
    bool loop = false, update = false;
    for (const Mutation& x : mc) {
      CHECK(x.line >= 2);  // not the table outside any function
      CHECK(x.line <= 6);
      loop = loop || (x.kind == "off-by-one" && x.after == "  for (int i = 0; i <= n; ++i) {");
      update = update || (x.kind == "remove-statement" && x.line == 4);
    }
    CHECK(loop);
    CHECK(update);
  }
  TEST_CASE("induced skills abstract a tree to its layout, never its names") {
    using V = std::vector<std::string>;
    const V py = swec::tree_features({"lib/calc/__init__.py", "tests/test_calc.py", "tests/test_more.py", "README"},
                                     "/nonexistent", "python");
    CHECK(py == V{"file tests/*", "file test_*.py", "file lib/*.py"});
    const V go = swec::tree_features({"errors.go", "errors_test.go", "stack_test.go", "internal/x.go"}, "/nonexistent",
                                     "go");
    CHECK(go == V{"file *_test.go", "file internal/*.go"});
    const V perl = swec::tree_features({"lib/A/B.pm", "t/basic.t", "t/more.t"}, "/nonexistent", "perl");
    CHECK(perl == V{"file t/*", "file *.t", "file lib/*.pm"});
    // a tree without tests or code of the language: nothing to say
    CHECK(swec::tree_features({"README", "docs/a.md"}, "/nonexistent", "rust").empty());
  }
  TEST_CASE("skills in order: evidence, then the tree's language, then an induced skill in its base's place") {
    swec::Skill py, rs, cm, lib;
    py.name = "python-pytest", py.language = "python", py.evidence = {"file *.py"};
    rs.name = "rust-cargo", rs.language = "rust", rs.evidence = {"file /Cargo.toml"};
    cm.name = "cmake-ctest", cm.language = "cpp", cm.evidence = {"file /CMakeLists.txt"};
    // induced from rust-cargo on a crate with tests/ and benches/
    lib.name = "induced-rust-cargo-0000abcd", lib.base = "rust-cargo", lib.language = "rust",
    lib.evidence = {"file /Cargo.toml", "file tests/*", "file src/*.rs", "file benches/*.rs"};
    const std::vector<swec::Skill> skills = {cm, py, rs, lib};
    const auto names = [](const std::vector<swec::SkillMatch>& ms) {
      std::vector<std::string> out;
      for (const swec::SkillMatch& m : ms) out.push_back(m.skill->name + (m.partial ? " (partial)" : ""));
      return out;
    };
    using V = std::vector<std::string>;
    // a crate with a Python script and no benches/: Rust first (3 of 4 files), the induced skill in rust-cargo's place
    const V crate = {"Cargo.toml", "src/lib.rs", "src/tables.rs", "tests/t.rs", "scripts/gen.py"};
    CHECK(names(swec::matching_skills(skills, "/nonexistent", crate)) ==
          V{"induced-rust-cargo-0000abcd (partial)", "rust-cargo", "python-pytest"});
    const std::vector<swec::SkillMatch> ms = swec::matching_skills(skills, "/nonexistent", crate);
    CHECK(ms[0].evidence.back() == "induced from rust-cargo: 3 of 4 evidence lines hold");
    // with benches/: a full match, the most evidence, first; no partial copy of it
    V full = crate;
    full.push_back("benches/b.rs");
    CHECK(names(swec::matching_skills(skills, "/nonexistent", full)) ==
          V{"induced-rust-cargo-0000abcd", "rust-cargo", "python-pytest"});
    // a Python package that ships a CMakeLists.txt: Python first (alphabetically CMake would be)
    CHECK(names(swec::matching_skills(skills, "/nonexistent", {"CMakeLists.txt", "a.py", "b.py", "c/x.c"})) ==
          V{"python-pytest", "cmake-ctest"});
    // the base's evidence gates an induced skill: no Cargo.toml at the top, no rust skill of either kind
    CHECK(names(swec::matching_skills(skills, "/nonexistent", {"tests/t.rs", "src/lib.rs", "a.py", "sub/Cargo.toml"})) ==
          V{"python-pytest"});
    // a manifest glob that starts with '/' matches at the top only: a C library's CMakeLists.txt in a folder is no
    // CMake build of the tree
    CHECK(names(swec::matching_skills(skills, "/nonexistent", {"libx/CMakeLists.txt", "libx/a.c", "libx/b.c", "a.py"})) ==
          V{"python-pytest"});
  }
  TEST_CASE("a Debian patch's DEP-3 header (or a format-patch's) becomes the commit message") {
    const std::string dep3 =
        "Description: fix the frobnicator\n long text\n .\n second paragraph\nAuthor: A <a@b>\nForwarded: no\n"
        "---\n--- a/x\n+++ b/x\n";
    CHECK(swec::dep3_message(dep3, "01.patch") ==
          "fix the frobnicator\n\nlong text\n\nsecond paragraph\n\nAuthor: A <a@b>\nForwarded: no\n\n"
          "Swe-Crafter-Source: debian-patch\nSwe-Crafter-Patch: 01.patch\n");
    const std::string fp =
        "From 0123456789abcdef0123456789abcdef01234567 Mon Sep 17 00:00:00 2001\nFrom: B <b@c>\n"
        "Subject: [PATCH 2/3] speed up\n\nBecause.\n---\n x | 1 +\n";
    CHECK(swec::dep3_message(fp, "02.patch").rfind("speed up\n\nBecause.\n\nFrom: B <b@c>\n", 0) == 0);
    // no header at all
    CHECK(swec::dep3_message("--- a/x\n+++ b/x\n", "03.patch").rfind("Debian patch 03.patch\n", 0) == 0);
  }
  TEST_CASE("a Debian control file's build dependencies: alternatives, profiles, versions and the packaging left out") {
    const std::string control =
        "Source: calc\nBuild-Depends: debhelper-compat (= 13), dh-sequence-nodejs, mocha <!nocheck>,\n"
        " node-a (>= 1.0) [amd64] | node-b, python3:any,\n libfoo-dev <stage1>, libbar-dev <!nodoc !nocheck>\n"
        "Build-Depends-Indep: node-c\nStandards-Version: 4.6.2\n\nPackage: calc\nDepends: node-z\n";
    const std::vector<std::vector<std::string>> deps = build_dependencies(control);
    REQUIRE(deps.size() == 5);
    CHECK(deps[0] == std::vector<std::string>{"mocha"});
    CHECK(deps[1] == std::vector<std::string>{"node-a", "node-b"});
    CHECK(deps[2] == std::vector<std::string>{"python3"});
    CHECK(deps[3] == std::vector<std::string>{"libbar-dev"});
    CHECK(deps[4] == std::vector<std::string>{"node-c"});
    CHECK(build_dependencies("Source: x\nMaintainer: y\n").empty());
  }

  TEST_CASE("synthetic bugs in C whose braces stand on their own lines (signatures over several lines)") {
    const std::string c =
        "#include <stdio.h>\n"                  // 0
        "static int table[] =\n{\n  1, 2 + 3\n};\n"  // 1-4: an initialiser, not a function
        "int\nadd(int a,\n    int b)\n"          // 5-7
        "{\n"                                  // 8
        "  return a + b;\n"                    // 9
        "}\n"                                  // 10
        "void f(void)\n{\n  if (x)\n  {\n    y = 1 + 2;\n  }\n}\n";  // 11-17
    const std::vector<swec::Mutation> ms = swec::candidate_mutations(c, "c");
    bool add = false, nested = false;
    for (const swec::Mutation& m : ms) {
      CHECK((m.line == 9 || m.line == 13 || m.line == 15));
      add = add || (m.line == 9 && m.after == "  return a - b;");
      nested = nested || m.line == 15;
    }
    CHECK(add);
    CHECK(nested);
  }

  TEST_CASE("synthetic bugs in Ruby: inside def blocks only, never in heredocs, =begin comments or after #") {
    const std::string rb =
        "module Calc\n"                                   // 0
        "  LIMIT = 1 + 2\n"                               // 1
        "=begin\n  def in_doc; 1 + 1; end\n=end\n"        // 2-4
        "  def self.add(a, b)\n"                          // 5
        "    total = a + b  # a + b\n"                    // 6
        "    log << total\n"                              // 7
        "    text = <<~EOS\n"                             // 8
        "      1 + 1 == 2\n"                              // 9
        "    EOS\n"                                       // 10
        "    total\n"                                     // 11
        "  end\n"                                         // 12
        "\n  X = 4 - 1\nend\n";
    const std::vector<swec::Mutation> ms = swec::candidate_mutations(rb, "ruby");
    REQUIRE_FALSE(ms.empty());
    bool flip = false, removed = false;
    for (const swec::Mutation& m : ms) {
      CHECK((m.line == 6 || m.line == 7 || m.line == 11));
      const std::string mutated = swec::apply_mutation(rb, m);
      flip = flip || mutated.find("total = a - b") != std::string::npos;
      removed = removed || (m.removes && m.line == 7);
      CHECK(mutated.find("# a + b") != std::string::npos);
      CHECK(mutated.find("1 + 1 == 2") != std::string::npos);
    }
    CHECK(flip);
    CHECK(removed);
  }

  TEST_CASE("synthetic bugs in PHP: inside methods only (return types, braces on their own lines), never in "
            "heredocs, docblocks or comments") {
    const std::string php =
        "<?php\nnamespace Calc;\n\nconst LIMIT = 1 + 2;\n\nclass Calc\n{\n    private $n = 3;\n\n"
        "    /**\n     * Adds: a + b\n     */\n    public function add(int $a, int $b = 0): int\n    {\n"
        "        $sum = $a + $b; // a + b\n        return $sum;\n    }\n\n"
        "    public function same($a, $b) {\n        $text = <<<EOT\n        1 + 1 === 2\n        EOT;\n"
        "        return $a === $b;\n    }\n}\n";
    const std::vector<swec::Mutation> ms = swec::candidate_mutations(php, "php");
    REQUIRE_FALSE(ms.empty());
    bool flip = false, strict = false;
    for (const swec::Mutation& m : ms) {
      CHECK((m.line == 14 || m.line == 22));
      const std::string mutated = swec::apply_mutation(php, m);
      flip = flip || mutated.find("$sum = $a - $b; // a + b") != std::string::npos;
      strict = strict || mutated.find("return $a !== $b;") != std::string::npos;
      CHECK(mutated.find("1 + 1 === 2") != std::string::npos);  // the heredoc's text is never mutated
    }
    CHECK(flip);
    CHECK(strict);
  }

  TEST_CASE("synthetic bugs in Perl: inside subs only, never in POD or comments") {
    const std::string pm =
        "package Calc;\nuse strict;\nmy $x = 1 + 2;\n\n=head1 NAME\n\nsub in_pod { return 1 + 1 }\n\n=cut\n\n"
        "sub add {\n    my ($a, $b) = @_;  # a + b\n    return $a + $b;\n}\n\n1;\n";
    const std::vector<swec::Mutation> ms = swec::candidate_mutations(pm, "perl");
    REQUIRE_FALSE(ms.empty());
    for (const swec::Mutation& m : ms) CHECK((m.line == 11 || m.line == 12));
    bool flip = false;
    for (const swec::Mutation& m : ms) {
      const std::string mutated = swec::apply_mutation(pm, m);
      flip = flip || mutated.find("return $a - $b;") != std::string::npos;
      CHECK(mutated.find("# a + b") != std::string::npos);  // the comment is never mutated
    }
    CHECK(flip);
  }
}
