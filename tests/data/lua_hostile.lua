-- A hostile LuaJIT process (issue 39: the runtime walkers against what a process makes of its
-- own memory), made of real Lua functions: N small functions, each loaded from its own chunk
-- whose name is 3,000 bytes long (what the reader keeps of a chunk name is capped), and HUGE
-- functions whose bytecode carries a line table of ~60,000 two-byte entries (15,000 lines of
-- dead code before the call; each table a read of ~120 KB), all distinct prototypes. The main
-- loop calls DEPTH-deep chains through them (no tail calls: every level is a frame), each
-- chain starting far from the last (a stride through all of them), so that every function is
-- sampled and no cache of a few thousand entries holds the frames of a second. It prints
-- "ready" once its functions exist, then runs for SECONDS and burns CPU at the bottom of each
-- chain, and prints "chains K" at its end.
-- Usage: luajit lua_hostile.lua N HUGE DEPTH SECONDS
-- (N 8 HUGE 0: the benign peer, the same depth through a few ordinary functions)
local N, HUGE, DEPTH, SECONDS = tonumber(arg[1]), tonumber(arg[2]), tonumber(arg[3]),
	tonumber(arg[4])
local PAD = string.rep("x", 3000)
local F = {}

local function burn()
	local x = 0
	for i = 1, 20000 do x = (x + i) % 1000003 end
	return x
end

-- the body of every function: the next level through the table (a call, then a return of its
-- result, so that the call is not a tail call)
local CALL = "local r = d > 0 and F[(k + d) % #F + 1](k, d - 1) or burn()\nreturn r\n"

local function define(chunk, pad_lines)
	local src = "local F, burn = ...\nreturn function(k, d)\n"
	if pad_lines > 0 then
		src = src .. "if k < 0 then\nlocal a = 0\n" .. string.rep("a = a + 1\n", pad_lines) ..
			"return a\nend\n"
	end
	src = src .. CALL .. "end\n"
	local fn = assert(loadstring(src, chunk))
	F[#F + 1] = fn(F, burn)
end

-- (the benign peer's chunks have ordinary names)
for i = 1, N do
	define("@lh" .. i .. "_" .. (HUGE > 0 and PAD or "x.lua"), 0)
end
for i = 1, HUGE do
	define("@lh" .. (N + i) .. "_huge.lua", 15000)
end
-- the same shuffle every run
local seed = 39
for i = #F, 2, -1 do
	seed = (seed * 1103515245 + 12345) % 2147483648
	local j = seed % i + 1
	F[i], F[j] = F[j], F[i]
end

print("ready")
io.stdout:flush()
local stop = os.clock() + SECONDS
local k = 0
while os.clock() < stop do
	F[k * 487 % #F + 1](k * 487, DEPTH)
	k = k + 1
end
print("chains " .. k)
