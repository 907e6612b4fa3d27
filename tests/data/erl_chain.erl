%% Known call chain for tests/system/test_beam.sh and the runtime matrix's beam rows:
%% erl_chain:main/1 -> alpha/1 -> beta/1 -> gamma/3, whose loop is one line (marked HOT): every
%% sample in gamma but one in hundreds of thousands of iterations has that exact line. The calls
%% are not tail calls (each caller uses the result), so every function keeps its frame. Each
%% iteration does some arithmetic besides its call (one reduction), so that the scheduler's own
%% work (a context switch every 4000 reductions) stays a small part of the samples.
%% It runs until the emulator has used Secs seconds of CPU (its start-up included), or 6 x Secs
%% of wall time on a machine too busy to give it that: its share of the samples does not depend
%% on the machine's load. With a second argument from_main the Secs seconds count from main's
%% start: under an emulated CPU (the arm64 kernel matrix's TCG) the JIT's loading of OTP's own
%% modules alone may take more CPU than Secs, and gamma would then not run at all.
-module(erl_chain).
-export([main/1]).

main(Args) ->
    Limit = limit(Args),
    R = alpha(Limit), % CALL_ALPHA
    io:format("~p~n", [R]),
    erlang:halt(0).

%% {CPU ms to stop at, wall-clock ms to stop at}
limit([Secs]) ->
    limit(list_to_integer(Secs) * 1000, 0);
limit([Secs, "from_main"]) ->
    {Cpu, _} = erlang:statistics(runtime),
    limit(list_to_integer(Secs) * 1000, Cpu).

limit(Ms, Cpu0) ->
    {Cpu0 + Ms, erlang:monotonic_time(millisecond) + 6 * Ms}.

alpha(Limit) ->
    R = beta(Limit), % CALL_BETA
    R + 1.

beta(Limit) ->
    R = gamma(Limit, 0, 0), % CALL_GAMMA
    R + 1.

gamma(Limit, N, A) when N > 0 -> gamma(Limit, N - 1, (A * 31 + N * N + (A bsr 3) + (A band N) * 7 + (N bxor A) * 5) band 16#ffffff); % HOT
gamma({CpuMs, WallEnd} = Limit, 0, A) ->
    {Cpu, _} = erlang:statistics(runtime),
    case Cpu < CpuMs andalso erlang:monotonic_time(millisecond) < WallEnd of
        true -> gamma(Limit, 1000000, A);
        false -> A band 1
    end.
