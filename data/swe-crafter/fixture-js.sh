#!/bin/bash
# fixture-js.sh DIR: a JavaScript module tested by tape, whose commits are
# labelled (good, code-only, breaks-a-test): exactly the good one must become
# an instance. Used by tests/cli/swe-crafter.sh (when tape is installed).
set -eu
. "$(dirname "$0")/fixture-lib.sh"
fixture_repo "$1" 03
mkdir -p test
cat > package.json <<'JS'
{
  "name": "calc",
  "version": "1.0.0",
  "main": "index.js",
  "scripts": { "test": "tape test/*.js" },
  "devDependencies": { "tape": "^5.0.0" }
}
JS
cat > index.js <<'JS'
'use strict';

function add(a, b) {
  return a - b;
}

function mul(a, b) {
  return a * b;
}

module.exports = { add: add, mul: mul };
JS
cat > test/mul.js <<'JS'
var test = require('tape');
var calc = require('../index.js');

test('mul', function (t) {
  t.equal(calc.mul(2, 3), 6);
  t.end();
});
JS
c 1 "initial"
sed -i 's/return a - b;/return a + b;/' index.js
cat > test/add.js <<'JS'
var test = require('tape');
var calc = require('../index.js');

test('add', function (t) {
  t.equal(calc.add(2, 3), 5);
  t.equal(calc.add(0, 0), 0);
  t.end();
});
JS
c 2 "add() subtracts (label: good)"
sed -i 's/^module.exports = { add: add, mul: mul };$/function neg(a) {\n  return -a;\n}\n\nmodule.exports = { add: add, mul: mul, neg: neg };/' index.js
c 3 "Add neg() (label: code-only)"
sed -i 's/return a \* b;/return a * b + 1;/' index.js
cat >> test/mul.js <<'JS'

test('mul by one', function (t) {
  t.equal(calc.mul(4, 1), 4);
  t.end();
});
JS
c 4 "Test mul by one (label: breaks-a-test)"
