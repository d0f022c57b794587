#!/bin/bash
# fixture-php.sh DIR: a PHP library tested by PHPUnit (composer.json's PSR-4
# autoload, no vendor/ folder: the php-phpunit skill makes the class map),
# whose commits are labelled (good, code-only, breaks-a-test): exactly the
# good one must become an instance. Used by tests/cli/swe-crafter.sh (when
# php, phpunit and phpab are installed).
set -eu
. "$(dirname "$0")/fixture-lib.sh"
fixture_repo "$1" 04
mkdir -p src tests
cat > composer.json <<'JSON'
{
    "name": "fixture/calc",
    "require": {"php": ">=8.0"},
    "require-dev": {"phpunit/phpunit": "^9.5"},
    "autoload": {"psr-4": {"Calc\\": "src/"}},
    "autoload-dev": {"psr-4": {"Calc\\Tests\\": "tests/"}}
}
JSON
cat > phpunit.xml.dist <<'XML'
<?xml version="1.0" encoding="UTF-8"?>
<phpunit bootstrap="vendor/autoload.php">
    <testsuites>
        <testsuite name="calc">
            <directory>tests</directory>
        </testsuite>
    </testsuites>
</phpunit>
XML
cat > src/Calc.php <<'PHP'
<?php

namespace Calc;

final class Calc
{
    public static function add(int $a, int $b): int
    {
        return $a - $b;
    }

    public static function mul(int $a, int $b): int
    {
        $product = $a * $b;
        return $product;
    }
}
PHP
cat > tests/MulTest.php <<'PHP'
<?php

namespace Calc\Tests;

use Calc\Calc;
use PHPUnit\Framework\TestCase;

final class MulTest extends TestCase
{
    public function testMul(): void
    {
        $this->assertSame(6, Calc::mul(2, 3));
    }
}
PHP
c 1 "initial"
sed -i 's/        return \$a - \$b;/        return $a + $b;/' src/Calc.php
cat > tests/AddTest.php <<'PHP'
<?php

namespace Calc\Tests;

use Calc\Calc;
use PHPUnit\Framework\TestCase;

final class AddTest extends TestCase
{
    public function testAdd(): void
    {
        $this->assertSame(5, Calc::add(2, 3));
    }
}
PHP
c 2 "add() subtracts (label: good)"
sed -i 's/^}$/\n    public static function neg(int $a): int\n    {\n        return -$a;\n    }\n}/' src/Calc.php
c 3 "Add neg() (label: code-only)"
sed -i 's/\$product = \$a \* \$b;/$product = $a * $b + 1;/' src/Calc.php
sed -i 's/^}$/\n    public function testMulOne(): void\n    {\n        $this->assertSame(4, Calc::mul(4, 1));\n    }\n}/' tests/MulTest.php
c 4 "Test mul by one (label: breaks-a-test)"
