-- Known chain for tests/system/test_luajit.sh and the runtime matrix: main chunk -> alpha (a
-- global) -> obj:beta (a method) -> M.gamma (a field), gamma's loop body on one line (with the
-- JIT on, that loop is a trace starting there). Frames are named as LuaJIT's traceback names
-- them, from the caller's call instruction. Lines are found by their "-- MARK" comments.
-- Argument (the chunk's first): seconds of CPU time. Each alpha() call is long (2,000,000
-- iterations: 10+ ms with the JIT): os.clock() is a system call, and a stop on a loaded box
-- lands at a system call's return more often than its share of time (test_replay_interp).

local function gamma(n) -- DEF_GAMMA
	local x = 0
	for i = 1, n do x = (x + i * i + 3) % 1000003 end -- HOT
	return x
end

local M = { gamma = gamma }
local obj = {}

function obj:beta(n)
	local r = M.gamma(n) -- CALL_GAMMA
	return r
end

function alpha(n)
	local r = obj:beta(n) -- CALL_BETA
	return r
end

local secs = tonumber((...)) or 1.5
local t = 0
while os.clock() < secs do
	t = t + alpha(2000000) -- CALL_ALPHA
end
print(t)
