# A 31-frame Ruby stack for bench/ruby.sh: <main> -> down x30 -> a one-line hot loop.
def down(n, iters)
  return down(n - 1, iters) if n > 1 # RECURSE
  i = 0
  i += 1 while i < iters # HOT
end

down(30, Integer(ARGV[0] || 30_000_000)) # CALL_MAIN
