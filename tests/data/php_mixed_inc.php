<?php
// Included by php_mixed.php: file-level code of a second file calling back into the first.
$sum = sort_loop($secs); // CALL_SORT
