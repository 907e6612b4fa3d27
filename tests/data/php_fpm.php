<?php
// The request handler php-fpm runs for tests/system/test_php.sh: {main} -> handle -> render ->
// leaf, leaf's loop on one line. Lines are found by their "// MARK" comments.
function fpm_leaf($n)
{
    $x = 0;
    for ($i = 0; $i < $n; $i++) { $x += $i * $i % 11; } // FPM_HOT
    return $x;
}

function fpm_render($n)
{
    return fpm_leaf($n); // FPM_CALL_LEAF
}

function fpm_handle()
{
    return fpm_render(3000000); // FPM_CALL_RENDER
}

echo fpm_handle(), "\n"; // FPM_CALL_HANDLE
