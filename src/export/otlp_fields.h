/* Field numbers of the OTLP profiles request, opentelemetry-proto v1.11.0 (package
 * opentelemetry.proto.profiles.v1development, Alpha: numbers changed between releases, see
 * docs/OTLP.md): the one table both the encoder (otlp.c) and the decoder (otlp_read.c) use, so
 * that what one writes is what the other reads. Message prefixes: REQ ExportProfilesService-
 * Request, DICT ProfilesDictionary, RP ResourceProfiles, SP ScopeProfiles, SCOPE
 * InstrumentationScope, KV KeyValue, ANY AnyValue, VT ValueType, LOC Location, FN Function,
 * MAP Mapping, KVU KeyValueAndUnit. Not to be included beside pprof_fields.h (PROFILE_*).
 */
#ifndef STACKSCOPE_OTLP_FIELDS_H
#define STACKSCOPE_OTLP_FIELDS_H

enum {
	REQ_RESOURCE_PROFILES = 1,
	REQ_DICTIONARY = 2,

	DICT_MAPPING = 1,
	DICT_LOCATION = 2,
	DICT_FUNCTION = 3,
	DICT_LINK = 4,
	DICT_STRING = 5,
	DICT_ATTRIBUTE = 6,
	DICT_STACK = 7,

	RP_RESOURCE = 1,
	RP_SCOPE_PROFILES = 2,
	RESOURCE_ATTRIBUTES = 1,
	SP_SCOPE = 1,
	SP_PROFILES = 2,
	SCOPE_NAME = 1,
	SCOPE_VERSION = 2,

	KV_KEY = 1,
	KV_VALUE = 2,
	KV_KEY_STRINDEX = 3, /* profiles only, instead of KV_KEY */
	ANY_STRING = 1,
	ANY_BOOL = 2,
	ANY_INT = 3,
	ANY_DOUBLE = 4,
	ANY_STRING_STRINDEX = 8, /* profiles only */

	PROFILE_SAMPLE_TYPE = 1,
	PROFILE_SAMPLES = 2,
	PROFILE_TIME = 3,
	PROFILE_DURATION = 4,
	PROFILE_PERIOD_TYPE = 5,
	PROFILE_PERIOD = 6,
	VT_TYPE = 1,
	VT_UNIT = 2,

	SAMPLE_STACK = 1,
	SAMPLE_ATTRS = 2,
	SAMPLE_LINK = 3,
	SAMPLE_VALUES = 4,
	SAMPLE_TIMESTAMPS = 5,

	STACK_LOCATIONS = 1,

	LOC_MAPPING = 1,
	LOC_ADDRESS = 2,
	LOC_LINES = 3,
	LOC_ATTRS = 4,
	LINE_FUNCTION = 1,
	LINE_LINE = 2,
	LINE_COLUMN = 3,

	FN_NAME = 1,
	FN_SYSTEM_NAME = 2,
	FN_FILENAME = 3,

	MAP_START = 1,
	MAP_LIMIT = 2,
	MAP_OFFSET = 3,
	MAP_FILENAME = 4,
	MAP_ATTRS = 5,

	KVU_KEY = 1,
	KVU_VALUE = 2,
};

#endif
