// cgo workload for tests/system/test_go.sh, built stripped (-ldflags='-s -w') by go.mk:
// main.main -> main.cgoLoop -> (cgo) c_outer -> c_inner, a hot loop in C, and back, until the
// deadline. The C functions are noinline so the chain is exact.
package main

/*
#cgo CFLAGS: -O2 -fno-omit-frame-pointer
__attribute__((noinline)) unsigned long c_inner(unsigned long x, long n)
{
	for (long i = 0; i < n; i++)
		x = x * 6364136223846793005UL + 1442695040888963407UL;
	__asm__ volatile("" : "+r"(x));
	return x;
}

__attribute__((noinline)) unsigned long c_outer(long n)
{
	unsigned long x = c_inner((unsigned long)n, n);
	__asm__ volatile("" : "+r"(x));
	return x + 1;
}
*/
import "C"

import (
	"fmt"
	"os"
	"strconv"
	"time"
)

//go:noinline
func cgoLoop(deadline time.Time) uint64 {
	var sum uint64
	for time.Now().Before(deadline) {
		sum += uint64(C.c_outer(200000)) // CGO_CALL
	}
	return sum
}

func main() {
	secs := 2.0
	if len(os.Args) > 1 {
		if v, err := strconv.ParseFloat(os.Args[1], 64); err == nil {
			secs = v
		}
	}
	fmt.Println(cgoLoop(time.Now().Add(time.Duration(secs * float64(time.Second)))))
}
