<?php
// A hostile PHP process (issue 39: the runtime walkers against what a process makes of its own
// memory), made of real functions: N functions with 3,000-byte names, written to files under a
// directory whose path is some 3,000 bytes long (the file names the profiler reads), HUGE of
// them with op arrays of 30,000 dead statements. The main loop calls DEPTH-deep chains through
// them, each chain starting far from the last (a stride through all of them), so that every
// function is sampled and no cache of a few thousand entries holds the frames of a second. It
// prints "ready" once its functions exist, then runs for SECONDS and burns CPU at the bottom of
// each chain. DIR is a scratch directory it fills (and leaves: the test removes it).
// Usage: php php_hostile.php DIR N HUGE DEPTH SECONDS
// (N 8 HUGE 0: the benign peer, the same depth through a few ordinary functions)
[$dir, $n, $huge, $depth, $seconds] = array_slice($argv, 1);
$n = (int)$n;
$huge = (int)$huge;
$depth = (int)$depth;

function burn()
{
    $x = 0;
    for ($i = 0; $i < 20000; $i++) {
        $x += $i;
    }
    return $x;
}

$pad = str_repeat('x', 3000);
$long = $dir;
for ($i = 0; $i < 12; $i++) {
    $long .= '/' . str_repeat(chr(ord('a') + $i), 240);
}
@mkdir($long, 0755, true);
$dead = str_repeat("        \$a = \$a + 1;\n", 30000);
$names = [];
$src = "<?php\n";
for ($i = 0; $i < $n + $huge; $i++) {
    $name = "f{$i}_$pad";
    $names[] = $name;
    $body = $i < $n ? '' : "    if (\$k < 0) {\n        \$a = 0;\n$dead    }\n";
    $src .= "function $name(\$k, \$d)\n{\n$body    global \$names;\n"
        . "    return \$d > 0 ? (\$names[(\$k + \$d) % count(\$names)])(\$k, \$d - 1) : burn();\n}\n";
    if ($i % 500 == 499 || $i == $n + $huge - 1) {
        $file = "$long/part$i.php";
        file_put_contents($file, $src);
        require $file;
        $src = "<?php\n";
    }
}
mt_srand(39);
shuffle($names);

echo "ready\n";
$stop = microtime(true) + (float)$seconds;
$k = 0;
while (microtime(true) < $stop) {
    ($names[$k * 487 % count($names)])($k * 487, $depth);
    $k++;
}
echo "chains $k\n";
