<?php
// Known chain for tests/system/test_php.sh: {main} -> Worker::run -> alpha -> beta -> gamma,
// gamma's loop on one line. Lines are found by their "// MARK" comments. Argument: seconds.
function gamma($n)
{
    $x = 0;
    for ($i = 0; $i < $n; $i++) { $x += $i * $i + 3; } // HOT
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
            $t += alpha(20000); // CALL_ALPHA
        }
        return $t;
    }
}

$w = new Worker();
echo $w->run((float)($argv[1] ?? 1.5)), "\n"; // CALL_RUN
