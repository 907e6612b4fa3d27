%% A hostile Erlang process (issue 39: the runtime walkers against what a process makes of its
%% own memory), made of real modules compiled and loaded at its start: MODS modules of FUNS
%% functions each. In the hostile form (PAD 1) every module's source names a file of 2,000
%% bytes (`-file`), and every function carries 20 lines of dead arithmetic and 8 call sites:
%% the JIT's debugger record of such a module repeats the file name in each of its ~2,000 line
%% entries (~2.6 MB, under the reader's 8 MiB cap), and the process's 4,800 return addresses
%% are more than a cache of 4,096 holds. The main loop calls DEPTH-deep chains through
%% all the functions (each level uses its callee's result: no tail call, every level a frame),
%% each chain starting far from the last, so that every function is sampled and no cache of a
%% few thousand entries holds the frames of a second. It prints "ready" once its modules are
%% loaded, then runs for SECS and burns CPU at the bottom of each chain, and prints "chains K".
%% Usage: erl -noshell -pa DIR -run erl_hostile main DIR MODS FUNS PAD DEPTH SECS
%% (MODS 1 FUNS 8 PAD 0: the benign peer, the same depth through a few ordinary functions)
-module(erl_hostile).
-export([main/1, step/2]).

main([Dir, ModsS, FunsS, PadS, DepthS, SecsS]) ->
    [Mods, Funs, Pad, Depth, Secs] =
        [list_to_integer(A) || A <- [ModsS, FunsS, PadS, DepthS, SecsS]],
    Fns = lists:append([make_module(Dir, M, Funs, Pad) || M <- lists:seq(1, Mods)]),
    persistent_term:put(eh_fns, list_to_tuple(shuffle(Fns, 39))),
    io:format("ready~n"),
    Stop = erlang:monotonic_time(millisecond) + Secs * 1000,
    K = run(0, Depth, Stop),
    io:format("chains ~p~n", [K]),
    erlang:halt(0).

run(K, Depth, Stop) ->
    case erlang:monotonic_time(millisecond) < Stop of
        true ->
            step(K * 487, Depth),
            run(K + 1, Depth, Stop);
        false ->
            K
    end.

%% The next level of a chain: a generated function, or the burn at the bottom.
step(_K, D) when D =< 0 ->
    burn(20000, 0);
step(K, D) ->
    T = persistent_term:get(eh_fns),
    {M, F} = element((K + D) rem tuple_size(T) + 1, T),
    M:F(K, D - 1).

burn(0, A) -> A;
burn(N, A) -> burn(N - 1, (A + N) band 16#ffffff).

shuffle(L, Seed) ->
    rand:seed(exsss, {Seed, Seed, Seed}),
    [X || {_, X} <- lists:sort([{rand:uniform(), X} || X <- L])].

%% Module eh_<M>: its source written to Dir, compiled, loaded; its functions as {Mod, Fun}.
make_module(Dir, M, Funs, Pad) ->
    Mod = list_to_atom("eh_" ++ integer_to_list(M)),
    Names = ["f" ++ integer_to_list(I) || I <- lists:seq(1, Funs)],
    File = case Pad of
               0 -> "eh_benign.erl";
               _ -> "eh" ++ integer_to_list(M) ++ "_" ++ lists:duplicate(2000, $x) ++ ".erl"
           end,
    Src = ["-module(", atom_to_list(Mod), ").\n",
           "-export([", lists:join(",", [N ++ "/2" || N <- Names]), "]).\n",
           "-file(\"", File, "\", 1).\n",
           [function(N, Pad) || N <- Names]],
    Path = filename:join(Dir, atom_to_list(Mod) ++ ".erl"),
    ok = file:write_file(Path, Src),
    {ok, Mod, Bin} = compile:file(Path, [binary, report_errors]),
    {module, Mod} = code:load_binary(Mod, Path, Bin),
    [{Mod, list_to_atom(N)} || N <- Names].

function(Name, Pad) ->
    Dead = case Pad of
               0 -> [];
               _ -> ["    A0 = K band 1,\n",
                     [["    A", integer_to_list(I), " = A", integer_to_list(I - 1), " * 3 + K,\n"]
                      || I <- lists:seq(1, 20)],
                     "    _ = A20,\n"]
           end,
    %% hostile: 8 call sites, one per chain residue (8 x FUNS x MODS return addresses)
    Sites = case Pad of 0 -> [0]; _ -> lists:seq(0, 7) end,
    Call = fun(J) ->
                   I = integer_to_list(J),
                   [Name, "(K, D) when K rem 8 =:= ", I, " ->\n",
                    "    R = erl_hostile:step(K, D),\n",
                    "    R + ", I, ";\n"]
           end,
    [Name, "(K, D) when K < 0 ->\n", Dead, "    D;\n",
     [Call(J) || J <- Sites],
     Name, "(_K, D) ->\n    D.\n"].
