-- Known chain for tests/system/test_luajit.sh and the runtime matrix: main chunk -> alpha ->
-- beta -> gamma, gamma's loop body on one line (with the JIT on, that loop is a trace starting
-- there). Lines are found by their "-- MARK" comments. Argument (the chunk's first): seconds of
-- CPU time.

local function gamma(n) -- DEF_GAMMA
	local x = 0
	for i = 1, n do x = (x + i * i + 3) % 1000003 end -- HOT
	return x
end

local function beta(n)
	local r = gamma(n) -- CALL_GAMMA
	return r
end

local function alpha(n)
	local r = beta(n) -- CALL_BETA
	return r
end

local secs = tonumber((...)) or 1.5
local t = 0
while os.clock() < secs do
	t = t + alpha(200000) -- CALL_ALPHA
end
print(t)
