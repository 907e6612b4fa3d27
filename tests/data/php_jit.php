<?php
// Known chain for tests/system/test_php.sh with opcache's JIT on: {main} -> Worker::run ->
// alpha -> beta -> gamma, gamma's loop calling into C on two lines (str_repeat, strrev: each
// C function must come with its own line) and doing PHP arithmetic on a third. Lines are
// found by their "// MARK" comments. Argument: seconds.
function gamma($n)
{
    $x = 0;
    $s = str_repeat('xyz', 1000 + $n); // SETUP
    for ($i = 0; $i < $n; $i++) {
        $x += strlen(str_repeat('ab', 40000 + ($i & 7))); // HOT
        $x += $i * $i + 3; // ARITH
        $x += ord(strrev($s)); // HOT2
    }
    return $x;
}

function beta($n)
{
    return gamma($n); // CALL_GAMMA
}

function alpha($n)
{
    return beta($n); // CALL_BETA
}

class Worker
{
    public function run($secs)
    {
        $end = microtime(true) + $secs;
        $t = 0;
        while (microtime(true) < $end) {
            $t += alpha(200); // CALL_ALPHA
        }
        return $t;
    }
}

$w = new Worker();
echo $w->run((float)($argv[1] ?? 1.5)), "\n"; // CALL_RUN
