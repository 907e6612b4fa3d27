<?php
// tests/unit/test_php.c's live PHP: {main} -> alpha -> beta -> {closure} -> Klass::wait ->
// fgets, waiting on stdin once it has printed "R". Lines are found by their "// MARK" comments.
class Klass
{
    public static function wait()
    {
        echo "R\n";
        fflush(STDOUT);
        return fgets(STDIN); // WAIT
    }
}

function beta()
{
    $f = function () {
        return Klass::wait(); // CALL_WAIT
    };
    return $f(); // CALL_CLOSURE
}

function alpha()
{
    return beta(); // CALL_BETA
}

alpha(); // CALL_ALPHA
