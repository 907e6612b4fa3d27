<?php
// PHP -> C -> PHP for tests/system/test_php.sh: an included file's code calls sort_loop, which
// runs a static method through usort, a closure through array_map, and an internal function
// (md5) through array_map. Lines are found by their "// MARK" comments. Argument: seconds.
class Sorter
{
    public static function cmp($a, $b)
    {
        $s = 0;
        for ($k = 0; $k < 40; $k++) { $s += ($a ^ $k) - ($b ^ $k); } // CMP
        return $s <=> 0;
    }
}

function sort_loop($secs)
{
    $end = microtime(true) + $secs;
    $data = [];
    for ($i = 0; $i < 200; $i++) {
        $data[] = ($i * 7919) % 1000;
    }
    $blobs = array_fill(0, 16, str_repeat("stackscope", 2000));
    $sum = 0;
    while (microtime(true) < $end) {
        $d = $data;
        usort($d, ['Sorter', 'cmp']); // USORT
        $m = array_map(function ($v) { // MAP
            $r = 0;
            for ($k = 0; $k < 400; $k++) { $r += $v * $k % 5; } // CLOSURE
            return $r;
        }, $d); // MAP_END
        $h = array_map('md5', $blobs); // MAP_MD5
        $sum += $m[0] + strlen($h[0]);
    }
    return $sum;
}

$secs = (float)($argv[1] ?? 1.5);
include __DIR__ . '/php_mixed_inc.php'; // INCLUDE
echo $sum, "\n";
