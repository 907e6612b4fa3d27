# Known call chain for tests/system/test_beam.sh's Elixir case, the Elixir twin of
# erl_chain.erl: ExChain.main/1 -> alpha/1 -> beta/1 -> gamma/3, whose loop is one line (marked
# HOT). The calls are not tail calls (each caller uses the result), so every function keeps its
# frame. Runs until the emulator has used secs seconds of CPU (start-up included), or 6 x secs
# of wall time on a machine too busy to give it that. Compiled by elixirc into Elixir.ExChain.beam.
defmodule ExChain do
  import Bitwise

  def main([secs]) do
    ms = String.to_integer(secs) * 1000
    limit = {ms, :erlang.monotonic_time(:millisecond) + 6 * ms}
    r = alpha(limit) # CALL_ALPHA
    IO.puts(r)
    :erlang.halt(0)
  end

  def alpha(limit) do
    r = beta(limit) # CALL_BETA
    r + 1
  end

  def beta(limit) do
    r = gamma(limit, 0, 0) # CALL_GAMMA
    r + 1
  end

  def gamma(limit, n, a) when n > 0, do: gamma(limit, n - 1, band(a * 31 + n * n + bsr(a, 3) + band(a, n) * 7 + bxor(n, a) * 5, 0xFFFFFF)) # HOT

  def gamma({cpu_ms, wall_end} = limit, 0, a) do
    {cpu, _} = :erlang.statistics(:runtime)

    if cpu < cpu_ms and :erlang.monotonic_time(:millisecond) < wall_end do
      gamma(limit, 1_000_000, a)
    else
      band(a, 1)
    end
  end
end
