# Known call chain for tests/system/test_ruby.sh: <main> -> Worker#alpha -> Worker#beta ->
# Worker#gamma -> the hot loop. The hot loop is one line (marked HOT): every sample in gamma
# but one in hundreds of thousands of iterations has that exact line.
class Worker
  def alpha(deadline)
    beta(deadline) # CALL_BETA
  end

  def beta(deadline)
    gamma(deadline) # CALL_GAMMA
  end

  def gamma(deadline)
    while Process.clock_gettime(Process::CLOCK_MONOTONIC) < deadline
      j = 0
      j += 1 while j < 300_000 # HOT
    end
  end
end

secs = Float(ARGV[0] || 2)
Worker.new.alpha(Process.clock_gettime(Process::CLOCK_MONOTONIC) + secs) # CALL_ALPHA
