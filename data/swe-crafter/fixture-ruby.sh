#!/bin/bash
# fixture-ruby.sh DIR: a Ruby library tested by minitest, whose commits are
# labelled (good, code-only, breaks-a-test): exactly the good one must become
# an instance. Used by tests/cli/swe-crafter.sh (when ruby is installed).
set -eu
. "$(dirname "$0")/fixture-lib.sh"
fixture_repo "$1" 03
mkdir -p lib test
cat > lib/calc.rb <<'RB'
module Calc
  def self.add(a, b)
    a - b
  end

  def self.mul(a, b)
    product = a * b
    product
  end
end
RB
cat > test/test_mul.rb <<'RB'
require "minitest/autorun"
require "calc"

class TestMul < Minitest::Test
  def test_mul
    assert_equal 6, Calc.mul(2, 3)
  end
end
RB
c 1 "initial"
sed -i 's/^    a - b$/    a + b/' lib/calc.rb
cat > test/test_add.rb <<'RB'
require "minitest/autorun"
require "calc"

class TestAdd < Minitest::Test
  def test_add
    assert_equal 5, Calc.add(2, 3)
  end
end
RB
c 2 "add() subtracts (label: good)"
sed -i 's/^end$/  def self.neg(a)\n    -a\n  end\nend/' lib/calc.rb
c 3 "Add neg() (label: code-only)"
sed -i 's/product = a \* b$/product = a * b + 1/' lib/calc.rb
cat >> test/test_mul.rb <<'RB'

class TestMulOne < Minitest::Test
  def test_mul_one
    assert_equal 4, Calc.mul(4, 1)
  end
end
RB
c 4 "Test mul by one (label: breaks-a-test)"
