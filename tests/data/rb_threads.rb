# Two busy Ruby threads with different chains for tests/system/test_ruby.sh: each sample must
# show the sampled thread's own Ruby stack (the GVL lets one run at a time; the other waits).
def spin_a(deadline)
  while Process.clock_gettime(Process::CLOCK_MONOTONIC) < deadline
    j = 0
    j += 1 while j < 200_000 # SPIN_A
  end
end

def spin_b(deadline)
  while Process.clock_gettime(Process::CLOCK_MONOTONIC) < deadline
    k = 0
    k += 2 while k < 400_000 # SPIN_B
  end
end

deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + Float(ARGV[0] || 2)
a = Thread.new { spin_a(deadline) } # THREAD_A
a.name = "spin-a"
b = Thread.new { spin_b(deadline) } # THREAD_B
b.name = "spin-b"
a.join
b.join
