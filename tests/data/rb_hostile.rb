# A hostile Ruby process (issue 39: the runtime walkers against what a process makes of its own
# memory), made of real methods: N small methods, each with a 2,000-byte name, and HUGE methods
# whose instruction sequences each carry a ~60,000-entry line table (15,000 lines of dead code
# before the call: just under the reader's cap, each table read and kept by the profiler), all
# distinct objects. The main loop calls DEPTH-deep chains through them, each chain starting
# far from the last (a stride through all of them), so that every method is sampled and no
# cache of a few thousand entries holds the frames of a second. It prints "ready" once its
# methods exist, then runs for SECONDS and burns CPU at the bottom of each chain.
# Usage: ruby rb_hostile.rb N HUGE DEPTH SECONDS
# (N 8 HUGE 0: the benign peer, the same depth through a few ordinary methods)
N, HUGE, DEPTH, SECONDS = ARGV.map(&:to_i)
PAD = "x" * 2000
NAMES = Array.new(N) { |i| :"s#{i}_#{PAD}" }

def burn
  x = 0
  20000.times { |i| x += i }
  x
end

NAMES.each do |name|
  eval(<<~RUBY)
    def #{name}(k, d)
      d > 0 ? send(NAMES[(k + d) % NAMES.size], k, d - 1) : burn
    end
  RUBY
end

if HUGE > 0
  # one compiled body loaded HUGE times: each load is its own instruction sequence (loading
  # is ten times faster than compiling), kept under its own alias as `big` is redefined
  src = "def big(k, d)\n  if k < 0\n    a = 0\n" + ("    a = a + 1\n" * 15000) +
        "    return a\n  end\n  d > 0 ? send(NAMES[(k + d) % NAMES.size], k, d - 1) : burn\nend\n"
  bin = RubyVM::InstructionSequence.compile(src, "rb_hostile_huge.rb").to_binary
  HUGE.times do |i|
    RubyVM::InstructionSequence.load_from_binary(bin).eval
    Object.alias_method(:"h#{i}", :big)
    NAMES << :"h#{i}"
  end
end
NAMES.shuffle!(random: Random.new(39))

puts "ready"
$stdout.flush
stop = Process.clock_gettime(Process::CLOCK_MONOTONIC) + SECONDS
k = 0
while Process.clock_gettime(Process::CLOCK_MONOTONIC) < stop
  send(NAMES[k * 487 % NAMES.size], k * 487, DEPTH)
  k += 1
end
puts "chains #{k}"
