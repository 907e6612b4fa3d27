// Function shapes of tests/system/test_node.sh: a class method, an arrow function, an
// anonymous function and a comparator called back by Array.prototype.sort, each with a hot
// loop, and a regular expression that backtracks; lines ending in
// "// MARK" are looked up by the test. Runs until argv[2] seconds have passed.
'use strict';

class Shape {
  area(n) {
    let s = 0;
    for (let i = 0; i < n; i++) { // AREA_LOOP
      s += (i * 3) % 11; // AREA_HOT
    }
    return s;
  }
}

const spin = (n) => {
  let s = 0;
  for (let i = 0; i < n; i++) { // SPIN_LOOP
    s += (i * 5) % 13; // SPIN_HOT
  }
  return s;
};

// A call's argument: V8 infers no name for it.
const unnamed = [];
unnamed.push(function (n) { // ANON_DEF
  let s = 0;
  for (let i = 0; i < n; i++) { // ANON_LOOP
    s += (i * 3) % 19; // ANON_HOT
  }
  return s;
});

function compare(a, b) {
  let s = 0;
  for (let i = 0; i < 3000; i++) { // CMP_LOOP
    s += (i * 7) % 17; // CMP_HOT
  }
  return a - b + (s & 0);
}

// V8 compiles a regular expression to machine code (irregexp) once it has run a few times:
// frames in V8's code space of no JS function. Quadratic over the start positions: ~3 ms a
// call here, as the others.
const backtrack = /(a+|b+)*c[0-9]{3}x/;
const subject = 'ab'.repeat(80) + 'c123y';

function viaRegExp() {
  let n = 0;
  for (let i = 0; i < 20; i++) {
    n += backtrack.test(subject) ? 1 : 0; // CALL_TEST
  }
  return n + 1;
}

function viaMethod() {
  return new Shape().area(100000); // CALL_AREA
}

function viaArrow() {
  return spin(100000); // CALL_SPIN
}

function viaAnon() {
  return unnamed[0](100000); // CALL_ANON
}

function viaSort() {
  return [5, 3, 9, 1, 7, 2, 8, 6, 4, 0].sort(compare).length; // CALL_SORT
}

const end = Date.now() + Number(process.argv[2] || 10) * 1000;
let total = 0;
while (Date.now() < end) {
  total += viaMethod() + viaArrow() + viaAnon() + viaSort() + viaRegExp(); // CALLS
}
process.exitCode = total > 0 ? 0 : 1;
