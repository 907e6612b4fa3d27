/* An embedded LuaJIT, as nginx/OpenResty runs it: a C program linking libluajit-5.1 that runs a
 * Lua file (tests/data/lua_chain.lua) through lua_pcall, for tests/system/test_luajit.sh.
 * No LuaJIT headers are needed: the few API functions are declared here (lua.h's prototypes).
 * Usage: lua_embed FILE SECONDS [off]   ("off": the JIT off, as `luajit -joff`)
 */
#include <stdio.h>
#include <stdlib.h>

typedef struct lua_State lua_State;

lua_State *luaL_newstate(void);
void luaL_openlibs(lua_State *L);
int luaL_loadfile(lua_State *L, const char *filename);
int luaL_loadstring(lua_State *L, const char *s);
int lua_pcall(lua_State *L, int nargs, int nresults, int errfunc);
void lua_pushstring(lua_State *L, const char *s);
const char *lua_tolstring(lua_State *L, int idx, size_t *len);
void lua_close(lua_State *L);

static int run_file(lua_State *L, const char *file, const char *secs)
{
	if (luaL_loadfile(L, file))
		return -1;
	lua_pushstring(L, secs);
	return lua_pcall(L, 1, 0, 0) ? -1 : 0;
}

int main(int argc, char **argv)
{
	lua_State *L;
	int ret = 0;

	if (argc < 3) {
		fprintf(stderr, "usage: %s FILE SECONDS [off]\n", argv[0]);
		return 2;
	}
	L = luaL_newstate();
	if (!L)
		return 1;
	luaL_openlibs(L);
	if (argc > 3 && (luaL_loadstring(L, "jit.off()") || lua_pcall(L, 0, 0, 0)))
		ret = 1;
	if (!ret && run_file(L, argv[1], argv[2]))
		ret = 1;
	if (ret)
		fprintf(stderr, "lua_embed: %s\n", lua_tolstring(L, -1, NULL));
	lua_close(L);
	return ret;
}
