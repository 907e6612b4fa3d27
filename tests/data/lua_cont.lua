-- Frames below a pcall and a metamethod for tests/system/test_luajit.sh: main chunk -> outer
-- (called through pcall: LuaJIT names it by its definition) -> the __index metamethod (run by
-- outer's table read, a continuation frame) -> its loop on one line. Lines are found by their
-- "-- MARK" comments. Argument (the chunk's first): seconds of CPU time.

local mt = {}
mt.__index = function(t, k)
	local x = 0
	for i = 1, 200000 do x = (x + i * 7) % 1000003 end -- HOT
	return x
end
local proxy = setmetatable({}, mt)

local function outer() -- DEF_OUTER
	local v = proxy.value -- CALL_INDEX
	return v
end

local secs = tonumber((...)) or 1.5
local t = 0
while os.clock() < secs do
	local ok, v = pcall(outer) -- CALL_PCALL
	t = t + v
end
print(t)
