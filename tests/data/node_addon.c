/* A tiny N-API addon for tests/system/test_node.sh: callBack(fn, n) calls the JavaScript
 * function fn(i) for i = 0 .. n - 1 from C (addon_call_js), so a sample in fn has the chain
 * JavaScript -> this addon's C -> V8's entry -> JavaScript. Built by the test with gcc against
 * the headers of Debian's nodejs (/usr/include/node), nothing downloaded.
 */
#include <node_api.h>

/* One call into JavaScript; kept out of line so that it is a frame of its own. */
__attribute__((noinline)) napi_value addon_call_js(napi_env env, napi_value fn, uint32_t i)
{
	napi_value global, arg, result = NULL;

	if (napi_get_global(env, &global) != napi_ok || napi_create_uint32(env, i, &arg) != napi_ok ||
	    napi_call_function(env, global, fn, 1, &arg, &result) != napi_ok)
		return NULL;
	return result;
}

static napi_value call_back(napi_env env, napi_callback_info info)
{
	napi_value argv[2], last = NULL;
	size_t argc = 2;
	uint32_t n = 0, i;

	if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 2 ||
	    napi_get_value_uint32(env, argv[1], &n) != napi_ok)
		return NULL;
	for (i = 0; i < n; i++)
		if (!(last = addon_call_js(env, argv[0], i)))
			return NULL;
	return last;
}

static napi_value init(napi_env env, napi_value exports)
{
	napi_value fn;

	if (napi_create_function(env, "callBack", NAPI_AUTO_LENGTH, call_back, NULL, &fn) != napi_ok ||
	    napi_set_named_property(env, exports, "callBack", fn) != napi_ok)
		return NULL;
	return exports;
}

NAPI_MODULE(NODE_GYP_MODULE_NAME, init)
