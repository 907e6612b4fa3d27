<?php
// bench/php.sh's workload: {main} -> down() DEPTH frames deep -> a one-line hot loop, for
// SECS seconds. Lines are found by their "// MARK" comments. Arguments: DEPTH SECS.
function down($n, $end)
{
    if ($n > 1) {
        return down($n - 1, $end); // RECURSE
    }
    $x = 0;
    while (microtime(true) < $end) {
        for ($i = 0; $i < 100000; $i++) { $x += $i * $i + 3; } // HOT
    }
    return $x;
}

echo down((int)($argv[1] ?? 30), microtime(true) + (float)($argv[2] ?? 1)), "\n"; // CALL_MAIN
