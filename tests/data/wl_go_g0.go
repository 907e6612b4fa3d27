// Go workload for tests/system/test_go.sh, built stripped (-ldflags='-s -w') by go.mk: code
// that runs on g0's stack, switched to from a goroutine, until the deadline:
//   - main.grow starts goroutines that recurse through main.deep with a large frame, so each
//     grows its stack: runtime.morestack -> newstack -> copystack on g0;
//   - main.collect keeps a linked heap alive and calls runtime.GC: the mark workers
//     (runtime.gcBgMarkWorker) drain it on g0 through runtime.systemstack.
// A sample on g0 must go on into the goroutine: main.deep under morestack, gcBgMarkWorker
// under systemstack, both down to runtime.goexit.
package main

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"time"
)

type node struct {
	next *node
	pad  [6]*int
}

var sink uint64

//go:noinline
func deep(n int) uint64 {
	var frame [256]uint64 // 2 KiB a frame: 8 levels outgrow a new goroutine's stack
	frame[n%256] = uint64(n)
	if n == 0 {
		return frame[0]
	}
	return deep(n-1) + frame[n%256] // DEEP_CALLS_DEEP
}

//go:noinline
func grow(deadline time.Time) {
	done := make(chan uint64)
	for time.Now().Before(deadline) {
		for i := 0; i < 8; i++ {
			go func() { done <- deep(64) }() // GROW_GO
		}
		for i := 0; i < 8; i++ {
			sink += <-done
		}
	}
}

//go:noinline
func collect(deadline time.Time) {
	var head *node
	for i := 0; i < 200000; i++ {
		head = &node{next: head}
	}
	for time.Now().Before(deadline) {
		runtime.GC() // COLLECT_GC
	}
	runtime.KeepAlive(head)
}

func main() {
	secs := 2.0
	if len(os.Args) > 1 {
		if v, err := strconv.ParseFloat(os.Args[1], 64); err == nil {
			secs = v
		}
	}
	deadline := time.Now().Add(time.Duration(secs * float64(time.Second)))
	go collect(deadline)
	grow(deadline)
	time.Sleep(10 * time.Millisecond)
	fmt.Println(sink)
}
