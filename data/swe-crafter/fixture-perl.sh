#!/bin/bash
# fixture-perl.sh DIR: a Perl module tested by prove (TAP), whose commits are
# labelled (good, code-only, breaks-a-test): exactly the good one must become
# an instance. Used by tests/cli/swe-crafter.sh.
set -eu
. "$(dirname "$0")/fixture-lib.sh"
fixture_repo "$1" 03
mkdir -p lib t
cat > lib/Calc.pm <<'PL'
package Calc;
use strict;
use warnings;

sub add {
    my ($a, $b) = @_;
    return $a - $b;
}

sub mul {
    my ($a, $b) = @_;
    return $a * $b;
}

1;
PL
cat > t/mul.t <<'PL'
use strict;
use warnings;
use lib 'lib';
use Test::More tests => 1;
use Calc;
is(Calc::mul(2, 3), 6, 'mul');
PL
c 1 "initial"
sed -i 's/return \$a - \$b;/return $a + $b;/' lib/Calc.pm
cat > t/add.t <<'PL'
use strict;
use warnings;
use lib 'lib';
use Test::More tests => 1;
use Calc;
is(Calc::add(2, 3), 5, 'add');
PL
c 2 "add() subtracts (label: good)"
sed -i 's/^1;$/sub neg { return -$_[0]; }\n\n1;/' lib/Calc.pm
c 3 "Add neg() (label: code-only)"
sed -i 's/return \$a \* \$b;/return $a * $b + 1;/' lib/Calc.pm
sed -i 's/^1;$/sub sq { return $_[0] * $_[0]; }\n\n1;/' lib/Calc.pm
cat > t/mul.t <<'PL'
use strict;
use warnings;
use lib 'lib';
use Test::More tests => 2;
use Calc;
is(Calc::mul(2, 3), 6, 'mul');
is(Calc::sq(3), 9, 'sq');
PL
c 4 "Add sq() (label: breaks-a-test)"
