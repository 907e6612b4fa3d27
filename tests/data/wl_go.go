// Go workload for tests/system/test_go.sh and the pclntab unit tests (tests/unit/test_gopclntab.c).
// Built stripped (-ldflags='-s -w': no .symtab, no DWARF, no .eh_frame) by go.mk.
//
// Chain: main.main -> main.alpha -> main.beta -> main.gamma (a frameless leaf: no calls, no
// locals on the stack) with main.churn inlined into main.gamma. Samples land on the lines
// marked GAMMA_LOOP and CHURN_LOOP; the tests grep this file for those markers, so keep them
// on the lines they describe.
package main

import (
	"fmt"
	"os"
	"strconv"
	"time"
)

var sink uint64

// churn is small enough for the compiler to inline into gamma: its frame must still appear.
func churn(x uint64, n int) uint64 {
	for i := 0; i < n; i++ {
		x ^= x<<13 ^ x>>7 ^ x<<17 // CHURN_LOOP
	}
	return x
}

//go:noinline
func gamma(n int) uint64 {
	x := uint64(n)
	for i := 0; i < n; i++ {
		x = x*6364136223846793005 + 1442695040888963407 // GAMMA_LOOP
	}
	return churn(x, n) // GAMMA_CALLS_CHURN
}

//go:noinline
func beta(n int) uint64 {
	return gamma(n) + 1 // BETA_CALLS_GAMMA
}

//go:noinline
func alpha(deadline time.Time) {
	for time.Now().Before(deadline) {
		sink += beta(200000) // ALPHA_CALLS_BETA
	}
}

// Server gives the function table a method name with a pointer receiver.
type Server struct{ hits int }

//go:noinline
func (s *Server) handle(n int) int {
	s.hits += n
	return s.hits
}

func main() {
	secs := 2.0
	if len(os.Args) > 1 {
		if v, err := strconv.ParseFloat(os.Args[1], 64); err == nil {
			secs = v
		}
	}
	s := &Server{}
	s.handle(1)
	alpha(time.Now().Add(time.Duration(secs * float64(time.Second)))) // MAIN_CALLS_ALPHA
	fmt.Println(sink, s.hits)
}
