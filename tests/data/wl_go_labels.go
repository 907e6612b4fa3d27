// Go workload with goroutine pprof labels for tests/system/test_go.sh, built stripped
// (-ldflags='-s -w') by go.mk: two goroutines burn CPU in main.work under pprof.Do with
// different labels ("route" = "/api/fast" or "/api/slow", "worker" = "1" or "2"), a third burns
// in main.unlabeled with none, until the deadline. Each sample of main.work must carry its
// goroutine's labels, and main.unlabeled's none.
package main

import (
	"context"
	"fmt"
	"os"
	"runtime/pprof"
	"strconv"
	"sync"
	"time"
)

var sinks [3]uint64

//go:noinline
func work(slot int, deadline time.Time) {
	x := uint64(slot + 1)
	for time.Now().Before(deadline) {
		for i := 0; i < 100000; i++ {
			x = x*6364136223846793005 + 1442695040888963407 // WORK_LOOP
		}
	}
	sinks[slot] = x
}

//go:noinline
func unlabeled(deadline time.Time) {
	x := uint64(7)
	for time.Now().Before(deadline) {
		for i := 0; i < 100000; i++ {
			x = x*2862933555777941757 + 3037000493 // UNLABELED_LOOP
		}
	}
	sinks[2] = x
}

func main() {
	secs := 2.0
	if len(os.Args) > 1 {
		if v, err := strconv.ParseFloat(os.Args[1], 64); err == nil {
			secs = v
		}
	}
	deadline := time.Now().Add(time.Duration(secs * float64(time.Second)))
	var wg sync.WaitGroup
	for w, route := range []string{"/api/fast", "/api/slow"} {
		wg.Add(1)
		go func(slot int, route string) {
			defer wg.Done()
			labels := pprof.Labels("route", route, "worker", strconv.Itoa(slot+1))
			pprof.Do(context.Background(), labels, func(context.Context) {
				work(slot, deadline)
			})
		}(w, route)
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		unlabeled(deadline)
	}()
	wg.Wait()
	fmt.Println(sinks[0] ^ sinks[1] ^ sinks[2])
}
