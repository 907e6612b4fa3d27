# Blocks, C functions and the other kinds of methods for tests/system/test_ruby.sh, each
# line the test looks for marked at its end (the blocks do their work on that same line):
#  - Mixed#sort_loop -> Enumerable#sort_by (C) -> block in Mixed#sort_loop -> Mixed#key;
#  - Mixed.count (a class method) -> Integer#times (C) -> block in Mixed.count;
#  - Mixed#made (define_method) -> Array#each (C) -> block (2 levels) in <class:Mixed>.
class Mixed
  DATA = (1..300).to_a

  def sort_loop
    DATA.sort_by { |v| key(v) } # SORT
  end

  def key(v)
    i = 0
    i += 1 while i < 400 # KEY
    v % 17
  end

  def self.count
    300.times { |_| j = 0; j += 1 while j < 400 } # TIMES
  end

  define_method(:made) do
    DATA.each { |_| k = 0; k += 1 while k < 400 } # EACH
  end
end

deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + Float(ARGV[0] || 2)
m = Mixed.new
while Process.clock_gettime(Process::CLOCK_MONOTONIC) < deadline
  m.sort_loop
  Mixed.count
  m.made
end
