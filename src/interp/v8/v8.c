/* V8 (Node.js) as a runtime of src/interp/interp.h: finds node (or libnode) among the
 * mapped files, takes every layout from the binary's own v8dbg_* postmortem symbols, registers
 * the embedded builtins as the file range and the anonymous executable mappings (V8's code
 * space) as the process's code ranges (its eBPF walk, bpf/interp/v8/walk.h, unwinds the
 * JavaScript frames in both) and turns the frames eBPF emits (SharedFunctionInfo + bytecode
 * offset, or optimised Code + pc offset) into function names, script names and lines, and
 * the functions optimised code inlined, by reading the process's memory.
 *
 * Versions: V8 11.x as in Node 20 (x86-64, no pointer compression: 8-byte tagged slots),
 * the node executable or a libnode.so.N (Debian's); V8 10.2 (Debian 12's Node 18) without
 * optimised code's lines (its Code holds its instructions, no instruction-start field);
 * V8 12.4 (Node 22) and 13.6 (Node 24: JSFunction without a Code, leaptiering's dispatch
 * handle in its place: every JIT frame's code found by its pc) by trusted_sfi(),
 * trusted_code_layout() and trusted_scope_layout(); V8 7.8 (Debian 11's Node 12: layout_7_8,
 * no baseline code, TurboFan's kind numbered 0); on arm64, Debian 12's libnode108 (V8 10.2:
 * the same layouts, its JSEntry's frame by entry_frames_from()).
 * Where the metadata lacks a field, the fallback follows V8's layout for that version and is
 * named below; a binary whose metadata lacks a required symbol (another 7.x), or uses pointer
 * compression, is not attached (counted as an unsupported file: native frames only, its
 * builtins named).
 *
 * Offsets, and where each comes from:
 *  - v8dbg_off_fp_{context,function,bytecode_array,bytecode_offset}: frame slots;
 *  - v8dbg_class_*: JSFunction::shared, SharedFunctionInfo::{name_or_scope_info,
 *    script_or_debug_info,function_data}, Script::{name,source,line_ends}, Map::instance_type,
 *    FixedArrayBase::length, FixedArray::data, BytecodeArray::data, String::length, the
 *    string kinds' fields; v8dbg_type_*: instance types; the v8dbg string tags and masks: string kinds;
 *    v8dbg_scopeinfo_idx_*: ScopeInfo's fixed slots;
 *  - not exported by V8 11.3: BytecodeArray::source_position_table, at FixedArrayBase::length
 *    + 3 words since V8 9.4 (checked: data = it + 8 + 14, as exported); the JSFunction
 *    instance types, JS_FUNCTION_TYPE and the 14 constructor types after it (V8 9.6.138+,
 *    instance-type.h); the bytecode handlers, from Builtins_WideHandler (the first bytecode)
 *    to the end of the embedded blob (v8_Default_embedded_blob_code_ and _size_); a binary
 *    stripped of those (Debian's libnode.so.N) has its builtins, their names and the
 *    handlers found in its own tables (v8_blob.h), the version from v8::internal::Version.
 * Each frame is checked against the real process at symbolization: the object eBPF named
 * must have the SharedFunctionInfo map type and the frame's cookie, or the frame shows as
 * "[v8: stale]" (counted), never as another function.
 *
 * Invariants: the caches are set-associative tables of fixed size (V8_SFI_CACHE_CAP,
 * V8_SCRIPT_CACHE_CAP, V8_CODE_CACHE_CAP; base/lru_sets.h) keyed by (pid, attach generation, address) and, for functions, the
 * cookie. All reads of process memory are bounded (names V8_STRING_MAX, source-position
 * tables V8_SPT_MAX, sources V8_SOURCE_MAX, line ends V8_LINES_MAX), on the process's read
 * budget (../common/symbol_cache.h: past it, a function or code object is a counted "over the
 * process's read budget" marker, a script gives no file), and what the caches hold is capped
 * at V8_CACHE_BYTES; a source-position table is walked through its marks (v8_lines.h) from
 * V8_SPT_MARKED bytes on: a frame's line costs a bounded walk whatever the function's size.
 */
#include <elf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/log.h"
#include "base/unaligned.h"
#include "base/lru_sets.h"
#include "base/u64_map.h"
#include "formats/elf_file.h"
#include "interp/common/runtime_counters.h"
#include "interp/common/proc_memory.h"
#include "interp/common/symbol_cache.h"
#include "interp/interp.h"
#include "interp/common/interp_elf.h"
#include "interp/v8/v8_blob.h"
#include "interp/v8/v8_heap.h"
#include "interp/v8/v8_lines.h"
#include "proc/executable.h"
#include "proc/maps.h"

#define V8_SFI_CACHE_CAP 4096
#define V8_CACHE_BYTES (24ULL << 20) /* tables held by both caches together */
#define V8_SCRIPT_CACHE_CAP 256
#define V8_SCRIPT_TRIES 4  /* reads of a script whose line ends could not be had */
#define V8_RETRY_EVERY 512 /* then one more every so many lookups (positions, line ends) */
/* ... or, line ends whose source could not be read for a passing reason (not a string of a
 * kind we cannot read), once this long since the last read: the reads of one batch of samples follow
 * each other within ms, all while the process is stopped in one GC
 */
#define V8_SCRIPT_RETRY_NS (20 * 1000000ULL)
#define V8_CODE_CACHE_CAP 1024
#define V8_INLINING_MAX 4096        /* inlined call sites (positions) of one optimised code */
#define V8_INLINED_TEXT 8192        /* bytes of one frame's inlined names and files */
#define V8_SPT_MAX (64 * 1024)      /* bytes of a source-position table */
#define V8_SPT_MARKED 1024          /* ... walked through marks (v8_lines.h) from this size on */
#define V8_BYTECODE_MAX (64 * 1024) /* bytes of a function's bytecode */
#define V8_SOURCE_MAX (16 * 1024 * 1024)      /* characters of a source scanned for line ends */
#define V8_LINES_MAX (1024 * 1024)            /* lines of a script */
#define V8_SCOPE_SLOTS 64                     /* ScopeInfo slots searched for the name */
#define V8_INLINED_LOCALS_MAX 75              /* kScopeInfoMaxInlinedLocalNamesSize */
#define V8_JS_FUNCTION_TYPES 15               /* JS_FUNCTION_TYPE and its constructor kinds */
#define V8_CODE_CLUSTER (256ULL << 20)        /* JIT mappings this close form one code range */
#define V8_CODE_RESERVE (128ULL << 20)        /* V8's code range reservation (x86-64) */
#define V8_REFRESH_NS (100 * 1000000ULL)      /* /proc/PID/maps re-read at most this often */
#define V8_FIRST_REFRESH_NS (10 * 1000000ULL) /* ... until V8's code space is known */
#define V8_CLASS_SCAN (1024 * 1024)           /* source characters read for a method's class */
#define V8_CLASS_NAME_MAX 128                 /* bytes of a class name */
#define V8_JIT_MAPS_READS 16                  /* maps reads for JIT frames before ranges */
#define V8_JIT_CODES 64                       /* code objects found by pc, per process */
#define V8_JIT_SCAN (1024 * 1024)             /* bytes scanned back from a pc for its code */
#define V8_JIT_CHUNK 8192                     /* ... read at a time */
#define V8_JIT_CANDIDATES 3 /* pcs with a JIT frame's 28 bits tried (a 512 MiB range) */

/* The v8dbg_* symbols read; every one is required. X(ID, "name") entries that make the enum
 * and sym_names (INTERP_LIST_ENUM / INTERP_LIST_TEXT).
 */
#define V8_SYMS(X)                                                                                \
	X(S_FP_CONTEXT, "v8dbg_off_fp_context")                                                   \
	X(S_FP_FUNCTION, "v8dbg_off_fp_function")                                                 \
	X(S_FP_BC_ARRAY, "v8dbg_off_fp_bytecode_array")                                           \
	X(S_FP_BC_OFFSET, "v8dbg_off_fp_bytecode_offset")                                         \
	X(S_TAGGED_SIZE, "v8dbg_TaggedSize")                                                      \
	X(S_SMI_SHIFT, "v8dbg_SmiShiftSize")                                                      \
	X(S_HEAP_TAG, "v8dbg_HeapObjectTag")                                                      \
	X(S_FIRST_NONSTRING, "v8dbg_FirstNonstringType")                                          \
	X(S_STR_REPR_MASK, "v8dbg_StringRepresentationMask")                                      \
	X(S_STR_ENC_MASK, "v8dbg_StringEncodingMask")                                             \
	X(S_STR_ONE_BYTE, "v8dbg_OneByteStringTag")                                               \
	X(S_STR_SEQ, "v8dbg_SeqStringTag")                                                        \
	X(S_STR_CONS, "v8dbg_ConsStringTag")                                                      \
	X(S_STR_THIN, "v8dbg_ThinStringTag")                                                      \
	X(S_STR_SLICED, "v8dbg_SlicedStringTag")                                                  \
	X(S_SCOPE_FIRST_VARS, "v8dbg_scopeinfo_idx_first_vars")                                   \
	X(S_SCOPE_NCL, "v8dbg_scopeinfo_idx_ncontextlocals")                                      \
	X(S_T_FN, "v8dbg_type_JSFunction__JS_FUNCTION_TYPE")                                      \
	X(S_T_SFI, "v8dbg_type_SharedFunctionInfo__SHARED_FUNCTION_INFO_TYPE")                    \
	X(S_T_SCRIPT, "v8dbg_type_Script__SCRIPT_TYPE")                                           \
	X(S_T_SCOPE, "v8dbg_type_ScopeInfo__SCOPE_INFO_TYPE")                                     \
	X(S_T_FIXED, "v8dbg_type_FixedArray__FIXED_ARRAY_TYPE")                                   \
	X(S_T_BYTES, "v8dbg_type_ByteArray__BYTE_ARRAY_TYPE")                                     \
	X(S_T_BC, "v8dbg_type_BytecodeArray__BYTECODE_ARRAY_TYPE")                                \
	X(S_MAP_TYPE, "v8dbg_class_Map__instance_type__uint16_t")                                 \
	X(S_FN_SHARED, "v8dbg_class_JSFunction__shared__SharedFunctionInfo")                      \
	X(S_SFI_NAME, "v8dbg_class_SharedFunctionInfo__name_or_scope_info__Object")               \
	X(S_SFI_SCRIPT, "v8dbg_class_SharedFunctionInfo__script_or_debug_info__HeapObject")       \
	X(S_SFI_DATA, "v8dbg_class_SharedFunctionInfo__function_data__Object")                    \
	X(S_SCRIPT_NAME, "v8dbg_class_Script__name__Object")                                      \
	X(S_SCRIPT_SOURCE, "v8dbg_class_Script__source__Object")                                  \
	X(S_SCRIPT_LINE_ENDS, "v8dbg_class_Script__line_ends__Object")                            \
	X(S_ARRAY_LENGTH, "v8dbg_class_FixedArrayBase__length__SMI")                              \
	X(S_FIXED_DATA, "v8dbg_class_FixedArray__data__uintptr_t")                                \
	X(S_BC_DATA, "v8dbg_class_BytecodeArray__data__uintptr_t")                                \
	X(S_STR_LENGTH, "v8dbg_class_String__length__int32_t")                                    \
	X(S_SEQ_CHARS, "v8dbg_class_SeqOneByteString__chars__char")                               \
	X(S_CONS_FIRST, "v8dbg_class_ConsString__first__String")                                  \
	X(S_CONS_SECOND, "v8dbg_class_ConsString__second__String")                                \
	X(S_THIN_ACTUAL, "v8dbg_class_ThinString__actual__String")                                \
	X(S_SLICED_PARENT, "v8dbg_class_SlicedString__parent__String")                            \
	X(S_SLICED_OFFSET, "v8dbg_class_SlicedString__offset__SMI")                               \
	/* not v8dbg: version and the embedded builtins */                                        \
	X(S_MAJOR, "_ZN2v88internal7Version6major_E")                                             \
	X(S_MINOR, "_ZN2v88internal7Version6minor_E")                                             \
	X(S_BUILD, "_ZN2v88internal7Version6build_E")                                             \
	X(S_BLOB, "v8_Default_embedded_blob_code_")                                               \
	X(S_BLOB_SIZE, "v8_Default_embedded_blob_code_size_")                                     \
	X(S_WIDE_HANDLER, "Builtins_WideHandler")                                                 \
	/* optional: baseline lines */                                                            \
	X(S_BC_SIZES, "_ZN2v88internal11interpreter9Bytecodes14kBytecodeSizesE")                  \
	X(S_T_CODE, "v8dbg_type_Code__CODE_TYPE")                                                 \
	X(S_CODE_SPT, "v8dbg_class_Code__source_position_table__ByteArray")                       \
	X(S_CODE_BC, "v8dbg_class_Code__bytecode_or_interpreter_data__HeapObject")                \
	X(S_CODE_OFFSETS, "v8dbg_class_Code__bytecode_offset_table__ByteArray")                   \
	X(S_KIND_MASK, "v8dbg_CodeKindFieldMask")                                                 \
	X(S_KIND_SHIFT, "v8dbg_CodeKindFieldShift")                                               \
	X(S_KIND_BASELINE, "v8dbg_CodeKindBaseline")                                              \
	/* optional: optimised code's lines and inlined functions */                              \
	X(S_KIND_INTERPRETED, "v8dbg_CodeKindInterpretedFunction")                                \
	X(S_CODE_DEOPT, "v8dbg_class_Code__deoptimization_data__FixedArray")                      \
	X(S_DD_INLINED_CNT, "v8dbg_DeoptimizationDataInlinedFunctionCountIndex")                  \
	X(S_DD_LITERALS, "v8dbg_DeoptimizationDataLiteralArrayIndex")                             \
	X(S_DD_SFI, "v8dbg_DeoptimizationDataSharedFunctionInfoIndex")                            \
	X(S_DD_INLINING, "v8dbg_DeoptimizationDataInliningPositionsIndex")                        \
	/* optional: the code object holding a pc (OSR code, code replaced on the stack) */       \
	X(S_T_ISTREAM, "v8dbg_type_InstructionStream__INSTRUCTION_STREAM_TYPE")                   \
	X(S_ISTREAM_START, "v8dbg_class_InstructionStream__instruction_start__uintptr_t")         \
	/* optional: V8 10's Code (instructions inline, after its header) */                      \
	X(S_CODE_ISTART, "v8dbg_class_Code__instruction_start__uintptr_t")                        \
	X(S_CODE_ISIZE, "v8dbg_class_Code__instruction_size__int")                                \
	X(S_CODE_FLAGS, "v8dbg_class_Code__flags__uint32_t")                                      \
	X(S_FN_CODE, "v8dbg_class_JSFunction__code__CodeT")                                       \
	/* optional: external strings' characters (node's own modules' sources) */                \
	X(S_STR_EXTERNAL, "v8dbg_ExternalStringTag")                                              \
	X(S_EXT_RESOURCE, "v8dbg_class_ExternalString__resource__Object")                         \
	/* V8 12.4-13.6 (trusted_layout()): renamed fields, trusted objects */                    \
	X(S_SFI_NAME_12, "v8dbg_class_SharedFunctionInfo__name_or_scope_info__Tagged_Object_")    \
	X(S_SFI_NAME_13,                                                                          \
	  "v8dbg_class_SharedFunctionInfo__name_or_scope_info__Tagged_NameOrScopeInfoT_")         \
	X(S_SFI_SCRIPT_12, "v8dbg_class_SharedFunctionInfo__script__Tagged_HeapObject_")          \
	X(S_SFI_TOKEN_12, "v8dbg_class_SharedFunctionInfo__raw_function_token_offset__int16_t")   \
	X(S_SFI_FEEDBACK_12,                                                                      \
	  "v8dbg_class_SharedFunctionInfo__feedback_metadata__Tagged_FeedbackMetadata_")          \
	X(S_BC_LENGTH_12, "v8dbg_class_BytecodeArray__length__SMI")                               \
	X(S_BC_WRAPPER_12, "v8dbg_class_BytecodeArray__wrapper__Tagged_BytecodeWrapper_")         \
	X(S_CODE_WRAPPER_12, "v8dbg_class_Code__wrapper__Tagged_CodeWrapper_")                    \
	X(S_CODE_ISTREAM_12, "v8dbg_class_Code__instruction_stream__Tagged_InstructionStream_")   \
	X(S_CODE_ISTART_12, "v8dbg_class_Code__instruction_start__Address")                       \
	X(S_FN_CODE_12, "v8dbg_class_JSFunction__code__Tagged_Code_")                             \
	X(S_T_TBYTES_12, "v8dbg_type_TrustedByteArray__TRUSTED_BYTE_ARRAY_TYPE")                  \
	X(S_T_TFIXED_12, "v8dbg_type_TrustedFixedArray__TRUSTED_FIXED_ARRAY_TYPE")                \
	X(S_T_TWEAK_13, "v8dbg_type_TrustedWeakFixedArray__TRUSTED_WEAK_FIXED_ARRAY_TYPE")        \
	X(S_DD_WSFI_13, "v8dbg_DeoptimizationDataWrappedSharedFunctionInfoIndex")                 \
	X(S_T_SFIW_13, "v8dbg_type_SharedFunctionInfoWrapper__SHARED_FUNCTION_INFO_WRAPPER_TYPE") \
	X(S_SFIW_SHARED_13,                                                                       \
	  "v8dbg_class_SharedFunctionInfoWrapper__shared_info__Tagged_SharedFunctionInfo_")       \
	/* V8 7.8 (layout_7_8) */                                                                 \
	X(S_SFI_SCRIPT_7, "v8dbg_class_SharedFunctionInfo__script_or_debug_info__Object")         \
	X(S_BC_SPT_7, "v8dbg_class_BytecodeArray__source_position_table__Object")                 \
	X(S_FN_FEEDBACK_7, "v8dbg_class_JSFunction__raw_feedback_cell__FeedbackCell")             \
	X(S_FP_ARGS_7, "v8dbg_off_fp_args")                                                       \
	X(S_T_SPT_CACHE_7, "v8dbg_type_SourcePositionTableWithFrameCache__"                       \
			   "SOURCE_POSITION_TABLE_WITH_FRAME_CACHE_TYPE")

enum v8_sym { V8_SYMS(INTERP_LIST_ENUM) S_CNT };

static const char *const sym_names[S_CNT] = { V8_SYMS(INTERP_LIST_TEXT) };

/* V8's frame types (StackFrame::Type) as the binary numbers them (v8dbg_frametype_*), and
 * what a frame of that type in JIT code is shown as.
 */
static const struct {
	const char *sym, *shown;
} frame_types[] = {
	{ "v8dbg_frametype_IrregexpFrame", "[v8] RegExp code" },
	{ "v8dbg_frametype_StubFrame", "[v8] stub" },
	{ "v8dbg_frametype_TurbofanStubWithContextFrame", "[v8] stub" },
	{ "v8dbg_frametype_InternalFrame", "[v8] internal frame" },
	{ "v8dbg_frametype_ConstructFrame", "[v8] construct frame" },
	{ "v8dbg_frametype_BuiltinFrame", "[v8] builtin" },
	{ "v8dbg_frametype_BuiltinExitFrame", "[v8] builtin exit" },
	{ "v8dbg_frametype_BuiltinContinuationFrame", "[v8] builtin continuation" },
	{ "v8dbg_frametype_JavaScriptBuiltinContinuationFrame", "[v8] builtin continuation" },
	{ "v8dbg_frametype_JavaScriptBuiltinContinuationWithCatchFrame",
	  "[v8] builtin continuation" },
	{ "v8dbg_frametype_EntryFrame", "[v8] entry" },
	{ "v8dbg_frametype_ConstructEntryFrame", "[v8] entry" },
	{ "v8dbg_frametype_ExitFrame", "[v8] exit" },
	{ "v8dbg_frametype_NativeFrame", "[v8] native frame" },
	{ "v8dbg_frametype_WasmFrame", "[v8] wasm" },
	{ "v8dbg_frametype_WasmToJsFrame", "[v8] wasm to JS" },
	{ "v8dbg_frametype_JsToWasmFrame", "[v8] JS to wasm" },
	{ "v8dbg_frametype_WasmExitFrame", "[v8] wasm exit" },
	{ "v8dbg_frametype_CWasmEntryFrame", "[v8] wasm entry" },
};

#define V8_FRAME_TYPES (sizeof(frame_types) / sizeof(frame_types[0]))
#define V8_FRAME_TYPE_MAX 64 /* StackFrame::Type values we accept (V8 11.3: ~30) */

struct v8_file {
	struct interp_file_base base;
	/* What a JIT frame with frame-type marker m (type m >> 1) is shown as: NULL unknown. */
	const char *frame_shown[V8_FRAME_TYPE_MAX];
	int major, minor, build;
	uint64_t handlers_lo, handlers_hi; /* ELF vaddrs */
	uint64_t blob_lo, blob_hi;         /* the embedded builtins (ELF vaddrs; hi 0: unknown) */
	struct v8_blob blob;               /* ... found without their symbols (names, extents) */
	struct v8_layout l;
	struct v8_proc_abi bpf; /* without the absolute handler addresses */
	/* Baseline lines (bpf.code_ok): Bytecodes::kBytecodeSizes ([3][n_bytecodes], borrowed
	 * from the file's mapping, which the executable keeps) and the Code fields.
	 */
	const uint8_t *bc_sizes;
	size_t n_bytecodes;
	uint16_t type_code;
	uint32_t code_bc, code_offsets, code_size;
	/* Optimised code (bpf.kind_opt_lo != 0): Code::source_position_table and
	 * deoptimization_data, and DeoptimizationData's indices (v8dbg_*).
	 */
	uint32_t code_spt, code_deopt, dd_inlined_cnt, dd_literals, dd_sfi, dd_inlining;
	/* Code by pc (istream_type != 0): an InstructionStream is its map, its Code, then its
	 * instructions (V8 11.3: the exported "instruction_start" is that header's size, 16);
	 * V8 10: the Code itself, its instructions istream_back bytes after its map.
	 */
	uint16_t istream_type;
	uint32_t istream_back; /* bytes from the instructions back to the header's map */
	uint32_t istream_code; /* bytes from that map to its Code (0: the header is the Code) */
	/* V8 12.4-13.6 (trusted_code_layout()): DeoptimizationData's own type (0: FixedArray's)
	 * and, 13.6, its function wrapped (type_sfi_wrapper != 0: its SharedFunctionInfo at
	 * sfiw_shared)
	 */
	uint16_t type_deopt, type_sfi_wrapper, type_inlining;
	uint32_t sfiw_shared;
};

struct v8_proc {
	struct interp_proc_base base;
	uint64_t bias;
	struct v8_file *file;
	uint64_t last_maps_ns;
	struct interp_code_range code[INTERP_CODE_RANGES];
	uint64_t istream_map; /* the InstructionStream map once seen (0: not yet) */
	/* Code objects found by pc (V8_SUB_JIT frames), round robin. */
	struct jit_code {
		uint64_t start, code;
		int32_t size;
		uint8_t kind;
	} jit[V8_JIT_CODES];
	uint32_t jit_next;
	struct interp_code_range jit_ranges[INTERP_CODE_RANGES]; /* read for jit_pc() */
	uint32_t jit_maps_reads;
	uint64_t jit_high; /* the bits above a JIT pc's 28 where code was last found */
};

struct script_entry {
	pid_t pid;
	uint32_t gen;
	uint64_t script;
	char *name;
	uint32_t *line_ends; /* NULL: none known (no line numbers) */
	size_t lines;
	uint32_t tries;   /* reads that gave no line ends (read again up to V8_SCRIPT_TRIES, */
	uint32_t lookups; /* then every V8_RETRY_EVERY lookups, or V8_SCRIPT_RETRY_NS after */
	uint64_t read_ns; /* the last read unless `external`) */
	bool external;    /* its source is a string we cannot read (an uncached external one) */
};

struct sfi_entry {
	pid_t pid;
	uint32_t gen;
	uint64_t sfi;
	uint32_t cookie;
	char *name;
	uint64_t script;     /* tagged Script, 0: none (a builtin) */
	int64_t start;       /* an anonymous function's start position until named by it, else -1 */
	uint8_t *spt;        /* the bytecode's source-position table (NULL: none) */
	uint32_t spt_misses; /* lookups without one: read again every V8_RETRY_EVERY */
	size_t spt_len;
	struct v8_spt_mark *marks; /* made at the table's first lookup (spt_lookup) */
	size_t marks_cnt;
	/* Its baseline code, read when a baseline frame first needs it (code 0: none). */
	bool code_read;
	uint64_t code;
	int32_t code_size;
	uint8_t *offsets; /* the code's bytecode-offset table */
	size_t offsets_len;
	uint8_t *bytecodes;
	size_t bytecodes_len;
};

/* An optimised code object (Maglev, TurboFan): its function, the functions it inlined (the
 * deoptimisation literals they are named by) and the tables that place a pc in them.
 */
struct code_entry {
	pid_t pid;
	uint32_t gen;
	uint64_t code;
	uint32_t cookie; /* (uint32_t)instruction_start */
	int32_t size;
	uint8_t kind; /* its CodeKind: Maglev (kind_opt_lo) or TurboFan */
	uint64_t sfi; /* the code's own function */
	uint8_t *spt; /* the code's source-position table (NULL: none recorded) */
	size_t spt_len;
	struct v8_spt_mark *marks; /* made at the table's first lookup (spt_lookup) */
	size_t marks_cnt;
	uint8_t *inlining; /* PodArray<InliningPosition> */
	size_t inlining_len;
	uint64_t *functions; /* the inlined SharedFunctionInfos (literals 0 .. count - 1) */
	size_t n_functions;
};

#define V8_STATS(X)                                                      \
	X(V8_STAT_FUNCTION_READS, "functions read")                      \
	X(V8_STAT_SCRIPT_READS, "scripts read")                          \
	X(V8_STAT_UNREADABLE, "unreadable")                              \
	X(V8_STAT_STALE, "stale")                                        \
	X(V8_STAT_NO_LINE, "without line")                               \
	X(V8_STAT_BASELINE_REPLACED, "baseline code replaced")           \
	X(V8_STAT_OVER_BUDGET, "tables over the cache budget")           \
	X(V8_STAT_CODE_READS, "optimised code read")                     \
	X(V8_STAT_MAGLEV_READS, "Maglev code read")                      \
	X(V8_STAT_NO_POSITIONS, "optimised code without positions")      \
	X(V8_STAT_INLINED, "inlined frames")                             \
	X(V8_STAT_JIT_FOUND, "code found by pc")                         \
	X(V8_STAT_JIT_NOT_FOUND, "code not found by pc")                 \
	/* not read: the process's read budget spent (symbol_cache.h) */ \
	X(V8_STAT_READS_OVER_BUDGET, "reads over budget")

enum v8_stat { V8_STATS(INTERP_LIST_ENUM) V8_STAT_CNT };

struct v8 {
	size_t bytes; /* held by the caches' tables (line ends, position and offset tables) */
	struct sfi_entry sfis[V8_SFI_CACHE_CAP];
	struct script_entry scripts[V8_SCRIPT_CACHE_CAP];
	struct code_entry codes[V8_CODE_CACHE_CAP];
	struct lru_sets sfi_slots, script_slots, code_slots; /* which entry holds an object */
	uint64_t stats[V8_STAT_CNT];
	char text[V8_STRING_MAX + 64];
	/* The current optimised frame (interp_symbol): names copied here, as the caches may
	 * evict an entry while the next inlined function is read.
	 */
	struct interp_inlined inlined[INTERP_INLINED_MAX];
	char inlined_text[V8_INLINED_TEXT];
};

static int v8_init(void *rt)
{
	struct v8 *v = rt;

	if (lru_sets__init(&v->sfi_slots, V8_SFI_CACHE_CAP) ||
	    lru_sets__init(&v->script_slots, V8_SCRIPT_CACHE_CAP) ||
	    lru_sets__init(&v->code_slots, V8_CODE_CACHE_CAP))
		return -ENOMEM;
	return 0;
}

static void baseline__clear(struct sfi_entry *e)
{
	free(e->offsets);
	free(e->bytecodes);
	e->offsets = e->bytecodes = NULL;
	e->offsets_len = e->bytecodes_len = 0;
	e->code = 0;
	e->code_read = false;
}

static void sfi_entry__clear(struct sfi_entry *e)
{
	baseline__clear(e);
	free(e->name);
	free(e->spt);
	free(e->marks);
	memset(e, 0, sizeof(*e));
}

static size_t sfi_entry__bytes(const struct sfi_entry *e)
{
	return e->spt_len + e->marks_cnt * sizeof(*e->marks) + e->offsets_len + e->bytecodes_len;
}

/* Keep the caches' tables within V8_CACHE_BYTES: a table that does not fit is not kept (its
 * frames get no line, counted). `old` bytes are released by the entry being replaced.
 */
static bool budget_take(struct v8 *v, size_t old, size_t add)
{
	v->bytes -= old < v->bytes ? old : v->bytes;
	if (v->bytes + add > V8_CACHE_BYTES) {
		v->stats[V8_STAT_OVER_BUDGET]++;
		return false;
	}
	v->bytes += add;
	return true;
}

static void code_entry__clear(struct code_entry *e)
{
	free(e->spt);
	free(e->marks);
	free(e->inlining);
	free(e->functions);
	memset(e, 0, sizeof(*e));
}

static size_t code_entry__bytes(const struct code_entry *e)
{
	return e->spt_len + e->marks_cnt * sizeof(*e->marks) + e->inlining_len +
	       e->n_functions * sizeof(uint64_t);
}

/* A cached source-position table (*spt, *spt_len bytes) ready for lookups: from
 * V8_SPT_MARKED bytes on, with its marks, made at its first lookup (a frame then walks at most
 * V8_SPT_MARK_EVERY entries, not the whole table each time). false: no table; marks that do
 * not fit the caches' budget drop it (no line, counted).
 */
static bool spt_ready(struct v8 *v, uint8_t **spt, size_t *spt_len, struct v8_spt_mark **marks,
		      size_t *marks_cnt)
{
	size_t cap = *spt_len / (2 * V8_SPT_MARK_EVERY) + 1;

	if (!*spt)
		return false;
	if (!*marks && *spt_len >= V8_SPT_MARKED) {
		*marks = malloc(cap * sizeof(**marks));
		*marks_cnt = *marks ? v8_lines__spt_marks(*spt, *spt_len, *marks, cap) : 0;
		if (!*marks || !budget_take(v, 0, *marks_cnt * sizeof(**marks))) {
			budget_take(v, *spt_len, 0);
			free(*marks);
			free(*spt);
			*marks = NULL;
			*spt = NULL;
			*marks_cnt = *spt_len = 0;
			return false;
		}
	}
	return true;
}

/* The script offset of bytecode offset bco in function e's table, or -1. */
static int64_t sfi_script_offset(struct v8 *v, struct sfi_entry *e, uint32_t bco)
{
	if (!spt_ready(v, &e->spt, &e->spt_len, &e->marks, &e->marks_cnt))
		return -1;
	return v8_lines__script_offset_marked(e->spt, e->spt_len, e->marks, e->marks_cnt, bco);
}

static void script_entry__clear(struct script_entry *e)
{
	free(e->name);
	free(e->line_ends);
	memset(e, 0, sizeof(*e));
}

static void v8_fini(void *rt)
{
	struct v8 *v = rt;
	size_t i;

	for (i = 0; i < V8_SFI_CACHE_CAP; i++)
		sfi_entry__clear(&v->sfis[i]);
	for (i = 0; i < V8_SCRIPT_CACHE_CAP; i++)
		script_entry__clear(&v->scripts[i]);
	for (i = 0; i < V8_CODE_CACHE_CAP; i++)
		code_entry__clear(&v->codes[i]);
	lru_sets__free(&v->sfi_slots);
	lru_sets__free(&v->script_slots);
	lru_sets__free(&v->code_slots);
}

/* ---- detection ---- */

/* node, nodeNN, nodejs, libnode.so*: the names Node ships under. */
static bool name_is_node(const char *path)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	if (!strncmp(base, "libnode.so", 10))
		return true;
	if (strncmp(base, "node", 4))
		return false;
	base += 4;
	if (!strcmp(base, "js"))
		return true;
	while (*base >= '0' && *base <= '9')
		base++;
	return !*base;
}

/* The int32 a v8dbg symbol holds: its initialised bytes, or 0 in a segment's
 * zero-initialised tail (.bss: the compiler puts the zero-valued ones there). False when
 * absent.
 */
static bool sym_int(struct elf_file *ef, const struct interp_sym *s, int32_t *out)
{
	const uint8_t *b;
	size_t i;

	if (!s->found)
		return false;
	if ((b = interp_elf__bytes(ef, s->addr, 4))) {
		memcpy(out, b, 4);
		return true;
	}
	for (i = 0; i < elf_file__segment_cnt(ef); i++) {
		const struct elf_segment *seg = elf_file__segment(ef, i);

		if (seg->type == PT_LOAD && s->addr >= seg->vaddr + seg->filesz &&
		    s->addr + 4 <= seg->vaddr + seg->memsz) {
			*out = 0;
			return true;
		}
	}
	return false;
}

/* What finding the Code of a pc needs: the InstructionStream's type and header (map, Code). */
static void jit_layout(struct elf_file *ef, const struct interp_sym *syms, struct v8_file *f)
{
	int32_t type, start;

	if (f->bpf.code_inline) { /* V8 10: the Code is the header */
		f->istream_type = f->type_code;
		f->istream_back = f->bpf.code_inline;
		return;
	}
	if (sym_int(ef, &syms[S_T_ISTREAM], &type) && sym_int(ef, &syms[S_ISTREAM_START], &start) &&
	    start == 2 * 8 && type > 0 && type < 0xffff) {
		f->istream_type = (uint16_t)type;
		f->istream_back = 2 * 8;
		f->istream_code = 8;
	}
}

/* What optimised code's frames need, into f (and f->bpf.kind_opt_*), given the baseline
 * layout (the same Code fields). The kinds follow V8 10.2-11's code-kind.h
 * (INTERPRETED_FUNCTION, BASELINE, MAGLEV, TURBOFAN in a row), checked against the two
 * exported; the Code's source-position table and deoptimisation data and
 * DeoptimizationData's indices are exported (the indices must lie within its fixed header of
 * 11 slots), V8 10.2's taken from its code.h: inlined function count 1, literals 2, the
 * function 6, inlining positions 7, as in 11.3.
 */
static void optimized_layout(struct elf_file *ef, const struct interp_sym *syms, struct v8_file *f)
{
	int32_t interpreted, deopt, cnt, literals, sfi, inlining;
	struct v8_proc_abi *b = &f->bpf;
	int32_t dd[4];
	int i;

	if (b->code_inline) { /* V8 10.2 exports none of these: its code.h */
		deopt = (int32_t)f->code_bc;
		cnt = 1;
		literals = 2;
		sfi = 6;
		inlining = 7;
	} else if (!sym_int(ef, &syms[S_CODE_DEOPT], &deopt) ||
		   !sym_int(ef, &syms[S_DD_INLINED_CNT], &cnt) ||
		   !sym_int(ef, &syms[S_DD_LITERALS], &literals) ||
		   !sym_int(ef, &syms[S_DD_SFI], &sfi) ||
		   !sym_int(ef, &syms[S_DD_INLINING], &inlining))
		return;
	if (!sym_int(ef, &syms[S_KIND_INTERPRETED], &interpreted) ||
	    interpreted + 1 != b->kind_baseline || b->kind_baseline + 2 > b->kind_mask ||
	    deopt != (int32_t)f->code_bc)
		return;
	dd[0] = cnt;
	dd[1] = literals;
	dd[2] = sfi;
	dd[3] = inlining;
	for (i = 0; i < 4; i++)
		if (dd[i] < 0 || dd[i] > 10)
			return;
	f->code_spt = f->code_offsets; /* the same slot as baseline code's offset table */
	f->code_deopt = (uint32_t)deopt;
	f->dd_inlined_cnt = (uint32_t)cnt;
	f->dd_literals = (uint32_t)literals;
	f->dd_sfi = (uint32_t)sfi;
	f->dd_inlining = (uint32_t)inlining;
	b->kind_opt_lo = (uint8_t)(b->kind_baseline + 1);
	b->kind_opt_hi = (uint8_t)(b->kind_baseline + 2);
	jit_layout(ef, syms, f);
}

/* What baseline (Sparkplug) lines need, into f->bpf (code_ok) and f. The Code fields V8
 * 11.3 does not export follow its code.h, checked against the exported ones: the
 * instruction start 2 words after the source-position table (the bytecode-offset table of
 * baseline code, the same slot), then the flags (u32, the kind in its low bits), the
 * builtin id and kind-specific flags (2 x u16, removed in 11.4.59), the instruction size
 * (i32). JSFunction::code is the word 3 after JSFunction::shared before 11.7.368. Only
 * V8 11.1-11.3 and 10.2 (code_layout_10) are trusted with them (other versions: baseline
 * and optimised frames without a line).
 */
/* V8 10.2's Code (its code.h): the map, relocation info, deoptimisation data (baseline code:
 * its bytecode), the source-position table (baseline: the bytecode-offset table) and the
 * CodeDataContainer, 8 bytes each, then the instruction size (i32), metadata size (i32) and
 * flags (u32), and its instructions from its header's size on (no instruction-start field:
 * the exported "instruction_start" is that size). The size, flags and header size are
 * exported and checked; so is JSFunction::code, 3 words after JSFunction::shared.
 */
static bool code_layout_10(struct elf_file *ef, const struct interp_sym *syms, struct v8_file *f,
			   int32_t *spt, int32_t *bc, int32_t *offsets)
{
	int32_t istart, isize, flags, fn_code;
	struct v8_proc_abi *b = &f->bpf;

	if (f->major != 10 || f->minor != 2 || !sym_int(ef, &syms[S_CODE_ISTART], &istart) ||
	    !sym_int(ef, &syms[S_CODE_ISIZE], &isize) ||
	    !sym_int(ef, &syms[S_CODE_FLAGS], &flags) || !sym_int(ef, &syms[S_FN_CODE], &fn_code) ||
	    isize != 5 * 8 || flags != isize + 2 * 4 || istart < flags + 4 || istart > 255 ||
	    istart % 32 || fn_code != (int32_t)f->l.fn_shared + 3 * 8)
		return false;
	*spt = *offsets = isize - 2 * 8;
	*bc = isize - 3 * 8;
	b->code_inline = (uint8_t)istart;
	return true;
}

static void baseline_layout(struct elf_file *ef, const struct interp_sym *syms, struct v8_file *f)
{
	int32_t t_code, spt, bc, offsets, mask, shift, baseline;
	struct v8_proc_abi *b = &f->bpf;
	bool v10 = code_layout_10(ef, syms, f, &spt, &bc, &offsets);

	if (((f->major != 11 || f->minor < 1 || f->minor > 3) && !v10) || !syms[S_BC_SIZES].found ||
	    !syms[S_BC_SIZES].size || syms[S_BC_SIZES].size % 3 ||
	    !sym_int(ef, &syms[S_T_CODE], &t_code) ||
	    (!v10 &&
	     (!sym_int(ef, &syms[S_CODE_SPT], &spt) || !sym_int(ef, &syms[S_CODE_BC], &bc) ||
	      !sym_int(ef, &syms[S_CODE_OFFSETS], &offsets))) ||
	    !sym_int(ef, &syms[S_KIND_MASK], &mask) || !sym_int(ef, &syms[S_KIND_SHIFT], &shift) ||
	    !sym_int(ef, &syms[S_KIND_BASELINE], &baseline)) {
		b->code_inline = 0;
		return;
	}
	if (offsets != spt || spt != 3 * 8 || bc != 2 * 8 || shift != 0 || mask <= 0 ||
	    mask > 0xff || baseline <= 0 || baseline > mask) {
		b->code_inline = 0;
		return;
	}
	f->n_bytecodes = syms[S_BC_SIZES].size / 3;
	f->bc_sizes = interp_elf__bytes(ef, syms[S_BC_SIZES].addr, syms[S_BC_SIZES].size);
	if (!f->bc_sizes)
		return;
	f->type_code = (uint16_t)t_code;
	f->code_bc = (uint32_t)bc;
	f->code_offsets = (uint32_t)offsets;
	b->fn_code = (uint8_t)(f->l.fn_shared + 3 * 8);
	if (v10) { /* the 4 words read from the instruction size on: size, then flags */
		f->code_size = (uint32_t)spt + 2 * 8;
		b->code_start = (uint8_t)f->code_size;
		b->code_flags = 2 * 4;
	} else {
		f->code_size = (uint32_t)spt + 2 * 8 + 8 + 4 + 2 + 2;
		b->code_start = (uint8_t)(spt + 2 * 8);
		b->code_flags = 8;
	}
	b->code_size = (uint8_t)(f->code_size - b->code_start);
	b->kind_mask = (uint8_t)mask;
	b->kind_baseline = (uint8_t)baseline;
	b->code_ok = 1;
	optimized_layout(ef, syms, f);
}

/* V8 12.4 (Node 22) and 13.6 (Node 24): versions whose trusted objects (Code, BytecodeArray,
 * DeoptimizationData, position tables) live in a trusted space. Without the sandbox (Node's
 * builds have no pointer compression, so no sandbox) a trusted or indirect pointer is a
 * plain tagged one; what moved is the layout, and the metadata names carry `Tagged_T_`
 * suffixes.
 */
static bool is_trusted_version(const struct v8_file *f)
{
	return (f->major == 12 && f->minor >= 4) || (f->major == 13 && f->minor <= 6);
}

/* The SharedFunctionInfo and BytecodeArray fields of V8 12.4-13.6 into v (S_SFI_NAME,
 * S_SFI_SCRIPT, S_SFI_DATA, S_BC_DATA checked) and *bc_spt; false when they do not check
 * out. shared-function-info.tq: after the map, the function data (12.4; 13.6: its trusted
 * part, then the untrusted part), the name or ScopeInfo, the feedback metadata, the script;
 * the function data holds the BytecodeArray, the baseline Code or an InterpreterData.
 * bytecode-array.h: the map, length, wrapper, source-position table, handler table, constant
 * pool, three int32 and two int16 (frame size, parameter size, max arguments, the register
 * of new.target), the data 8-aligned after them.
 */
static bool trusted_sfi(struct elf_file *ef, const struct interp_sym *syms, struct v8_file *f,
			int32_t *v, uint32_t *bc_spt)
{
	int32_t name, script, feedback, length, wrapper, data;

	if (!is_trusted_version(f) ||
	    !(sym_int(ef, &syms[S_SFI_NAME_12], &name) ||
	      sym_int(ef, &syms[S_SFI_NAME_13], &name)) ||
	    !sym_int(ef, &syms[S_SFI_SCRIPT_12], &script) ||
	    !sym_int(ef, &syms[S_SFI_FEEDBACK_12], &feedback) ||
	    !sym_int(ef, &syms[S_BC_LENGTH_12], &length) ||
	    !sym_int(ef, &syms[S_BC_WRAPPER_12], &wrapper) || !sym_int(ef, &syms[S_BC_DATA], &data))
		return false;
	if (name != (f->major == 12 ? 2 : 3) * 8 || feedback != name + 8 || script != name + 16 ||
	    length != 8 || wrapper != length + 8 ||
	    data != (int32_t)((wrapper + 8 + 3 * 8 + 3 * 4 + 2 * 2 + 7) & ~7u))
		return false;
	v[S_SFI_NAME] = name;
	v[S_SFI_SCRIPT] = script;
	v[S_SFI_DATA] = 8;
	*bc_spt = (uint32_t)wrapper + 8;
	return true;
}

/* ScopeInfo of V8 13.6 (scope-info.tq since 12.8.44): its flags a raw uint32 (not a Smi),
 * then the parameter and context-local counts, the function's start and end positions at
 * fixed slots 3 and 4 (after the flags), then the variables as before; ScopeType numbers
 * SCRIPT_SCOPE first (globals.h: function scopes 4, class scopes 2). 12.4 keeps 11's.
 */
static void trusted_scope_layout(struct v8_file *f)
{
	if (f->major != 13 || f->l.scope_ncontext_locals != 2 || f->l.scope_first_vars != 5)
		return;
	f->l.scope_raw_flags = 1;
	f->l.scope_positions = 3;
	f->l.scope_function = 4;
	f->l.scope_class = 2;
}

/* What V8 12.4-13.6's JIT frames need, into f->bpf and f (in place of baseline_layout()).
 * code.h: Code is a data object (trusted space) holding the map, the deoptimisation data (or
 * baseline code's bytecode / InterpreterData), the position table (baseline code: its
 * bytecode-offset table), its wrapper, its InstructionStream, the instruction start (a
 * plain address), (13.6: the dispatch handle, 4 bytes), flags, the instruction size: the
 * last four exported, the first two derived from the wrapper's offset and checked by its
 * neighbours. JSFunction::code is exported by 12.4; 13.6 (leaptiering) keeps a dispatch
 * handle there instead: its frames' code is found by the pc (fn_code 0). Byte arrays read
 * (position tables, offset tables, inlining positions) are TrustedByteArrays;
 * DeoptimizationData a TrustedFixedArray (12.4: its inlining positions still a ByteArray) or
 * a ProtectedFixedArray (13.6), whose function is a SharedFunctionInfoWrapper. The bytecode sizes (baseline lines) from .symtab
 * when there (not in Debian's libnode: baseline frames without a line). InstructionStream:
 * its map, its Code, then 16 more bytes of header (the instructions 32 bytes after the map).
 */
static void trusted_code_layout(struct elf_file *ef, const struct interp_sym *syms,
				struct v8_file *f)
{
	int32_t t_code, wrapper, istream, istart, flags, size, mask, shift, baseline, interpreted,
		fn_code = 0, tbytes, tfixed, t_is, is_start, cnt, literals, sfi, inlining;
	struct v8_proc_abi *b = &f->bpf;

	if (!sym_int(ef, &syms[S_T_CODE], &t_code) ||
	    !sym_int(ef, &syms[S_CODE_WRAPPER_12], &wrapper) ||
	    !sym_int(ef, &syms[S_CODE_ISTREAM_12], &istream) ||
	    !sym_int(ef, &syms[S_CODE_ISTART_12], &istart) ||
	    !sym_int(ef, &syms[S_CODE_FLAGS], &flags) || !sym_int(ef, &syms[S_CODE_ISIZE], &size) ||
	    !sym_int(ef, &syms[S_KIND_MASK], &mask) || !sym_int(ef, &syms[S_KIND_SHIFT], &shift) ||
	    !sym_int(ef, &syms[S_KIND_BASELINE], &baseline) ||
	    !sym_int(ef, &syms[S_KIND_INTERPRETED], &interpreted) ||
	    !sym_int(ef, &syms[S_T_TBYTES_12], &tbytes) ||
	    !sym_int(ef, &syms[S_T_TFIXED_12], &tfixed) ||
	    !sym_int(ef, &syms[S_DD_INLINED_CNT], &cnt) ||
	    !sym_int(ef, &syms[S_DD_LITERALS], &literals) ||
	    !sym_int(ef, &syms[S_DD_INLINING], &inlining))
		return;
	if (wrapper != 3 * 8 || istream != wrapper + 8 || istart != istream + 8 ||
	    flags != istart + (f->major == 12 ? 8 : 12) || size != flags + 4 || shift != 0 ||
	    mask <= 0 || mask > 0xff || baseline <= 0 || baseline + 2 > mask ||
	    interpreted + 1 != baseline || tbytes <= 0 || tbytes >= 0xffff || tfixed <= 0 ||
	    tfixed >= 0xffff || t_code <= 0 || t_code >= 0xffff)
		return;
	if (f->major == 12) {
		if (!sym_int(ef, &syms[S_FN_CODE_12], &fn_code) ||
		    fn_code != (int32_t)f->l.fn_shared - 8 || !sym_int(ef, &syms[S_DD_SFI], &sfi))
			return;
		f->type_deopt = (uint16_t)tfixed;
	} else {
		int32_t t_wrapper, shared, t_weak;

		if (syms[S_FN_CODE_12].found || !sym_int(ef, &syms[S_DD_WSFI_13], &sfi) ||
		    !sym_int(ef, &syms[S_T_SFIW_13], &t_wrapper) ||
		    !sym_int(ef, &syms[S_SFIW_SHARED_13], &shared) ||
		    !sym_int(ef, &syms[S_T_TWEAK_13], &t_weak) ||
		    !sym_int(ef, &syms[S_T_ISTREAM], &t_is) || t_wrapper <= 0 ||
		    t_wrapper >= 0xffff || shared != 8 || t_weak != tfixed + 2 ||
		    t_is + 1 >= t_wrapper)
			return;
		f->type_sfi_wrapper = (uint16_t)t_wrapper;
		f->sfiw_shared = (uint32_t)shared;
		/* ProtectedFixedArray: not exported; the type after InstructionStream's (13.6's
		 * instance types: 192, 193, the wrapper 195)
		 */
		f->type_deopt = (uint16_t)(t_is + 1);
	}
	if (cnt < 0 || cnt > 10 || literals < 0 || literals > 10 || sfi < 0 || sfi > 10 ||
	    inlining < 0 || inlining > 10)
		return;
	if (syms[S_BC_SIZES].found && syms[S_BC_SIZES].size && !(syms[S_BC_SIZES].size % 3) &&
	    (f->bc_sizes = interp_elf__bytes(ef, syms[S_BC_SIZES].addr, syms[S_BC_SIZES].size)))
		f->n_bytecodes = syms[S_BC_SIZES].size / 3;
	/* the inlining positions: still a ByteArray in 12.4, trusted in 13.6 */
	f->type_inlining = f->major == 12 ? f->l.type_byte_array : (uint16_t)tbytes;
	f->l.type_byte_array = (uint16_t)tbytes;
	f->type_code = (uint16_t)t_code;
	f->code_bc = (uint32_t)wrapper - 2 * 8;
	f->code_offsets = (uint32_t)wrapper - 8;
	f->code_size = (uint32_t)size;
	b->fn_code = (uint8_t)fn_code;
	b->code_start = (uint8_t)istart;
	b->code_flags = (uint8_t)(flags - istart);
	b->code_size = (uint8_t)(size - istart);
	b->kind_mask = (uint8_t)mask;
	b->kind_baseline = (uint8_t)baseline;
	b->code_ok = 1;
	f->code_spt = f->code_offsets;
	f->code_deopt = f->code_bc;
	f->dd_inlined_cnt = (uint32_t)cnt;
	f->dd_literals = (uint32_t)literals;
	f->dd_sfi = (uint32_t)sfi;
	f->dd_inlining = (uint32_t)inlining;
	b->kind_opt_lo = (uint8_t)(baseline + 1);
	b->kind_opt_hi = (uint8_t)(baseline + 2);
	if (sym_int(ef, &syms[S_T_ISTREAM], &t_is) &&
	    sym_int(ef, &syms[S_ISTREAM_START], &is_start) && is_start == 4 * 8 && t_is > 0 &&
	    t_is < 0xffff) {
		f->istream_type = (uint16_t)t_is;
		f->istream_back = (uint32_t)is_start;
		f->istream_code = 8;
	}
}

/* The layout from the symbols; 0, or -ENOTSUP naming what is missing. */
/* External strings (node's own modules: their sources are static data of the binary, handed
 * to V8 as external one-byte strings): the tag, and where a cached one keeps its characters'
 * address, the word after its resource (V8 11's ExternalString::kResourceDataOffset; an
 * uncached one, type bit 4, kUncachedExternalStringMask, has none). V8 11 only, as the
 * other offsets not exported, and 7.8, whose ExternalString is laid out the same (checked on
 * Node 12.22: node's module loader at the lines of V8's own stack trace); otherwise those
 * scripts keep no lines.
 */
static void external_layout(struct elf_file *ef, const struct interp_sym *syms, struct v8_file *f)
{
	int32_t tag, resource;

	if ((f->major != 11 && (f->major != 7 || f->minor != 8)) ||
	    !sym_int(ef, &syms[S_STR_EXTERNAL], &tag) ||
	    !sym_int(ef, &syms[S_EXT_RESOURCE], &resource) || tag <= 0 ||
	    tag > f->l.str_repr_mask || tag == f->l.str_seq || tag == f->l.str_cons ||
	    tag == f->l.str_thin || tag == f->l.str_sliced || resource < 8 || resource > 64 ||
	    resource % 8)
		return;
	f->l.str_external = (uint16_t)tag;
	f->l.str_uncached = 0x10;
	f->l.ext_data = (uint32_t)resource + 8;
}

/* ---- V8 7.8 (Debian 11's Node 12) ----
 * Its metadata lacks some fields and names two by another type; what it lacks follows 7.8's
 * own layout, checked against the binary (and, when written, against Node 12.22's live
 * heap):
 *  - the interpreter's frame slots: the BytecodeArray right below the function (fp - 24),
 *    the bytecode offset below it (fp - 32): no argument-count slot before 8.7 (checked:
 *    the function at fp - 16, the arguments from fp + 16);
 *  - SharedFunctionInfo::script_or_debug_info and BytecodeArray::source_position_table are
 *    exported as Object (the latter at FixedArrayBase::length + 3 words, as later);
 *  - BytecodeArray's data: after the source-position table, 3 int32 and 2 int8 (+ 8 + 14),
 *    checked in the binary: InterpreterEntryTrampoline sets r9, the bytecode offset
 *    register, to that offset less the heap tag (`mov r9, imm32`) and dispatches the first
 *    bytecode through [r14 + r9]: r14 holds the BytecodeArray in the handlers (r12 from
 *    V8 8, when r14 became the pointer-compression base);
 *  - Code (code_layout_7) and ScopeInfo (scope_info_facts_7).
 */
static bool v7(const struct v8_file *f)
{
	return f->major == 7 && f->minor == 8;
}

/* The embedded builtin V8 names `name` ("InterpreterEntryTrampoline"): its bytes in the
 * file, *n of them; NULL when not found.
 */
static const uint8_t *builtin_bytes(struct elf_file *ef, const struct v8_file *f, const char *name,
				    size_t *n)
{
	size_t i;

	if (!f->blob.names)
		return NULL;
	for (i = 0; i < f->blob.builtin_cnt; i++) {
		const struct v8_builtin *b = &f->blob.builtins[i];

		if (b->name == UINT32_MAX || strncmp(f->blob.names + b->name, "[v8] ", 5) ||
		    strcmp(f->blob.names + b->name + 5, name))
			continue;
		*n = b->size;
		return interp_elf__bytes(ef, f->blob.code + b->off, b->size);
	}
	return NULL;
}

/* The interpreter's entry: whether it sets r9 to bc_data - 1 and which register
 * (12 or 14; 0: neither) it loads the first bytecode through, [reg + r9] (movzx r32,
 * byte: REX.X.B 0f b6, ModRM mod 0 rm 4, SIB scale 1 index r9).
 */
static bool entry_checks(struct elf_file *ef, const struct v8_file *f, int32_t bc_data, int *bc_reg)
{
	const uint8_t *c;
	size_t n, i;
	bool offset = false;

	*bc_reg = 0;
	if (!(c = builtin_bytes(ef, f, "InterpreterEntryTrampoline", &n)) || n < 8)
		return false;
	for (i = 0; i + 7 <= n; i++) {
		if (c[i] == 0x49 && c[i + 1] == 0xc7 && c[i + 2] == 0xc1 &&
		    (int32_t)(c[i + 3] | c[i + 4] << 8 | c[i + 5] << 16 |
			      (uint32_t)c[i + 6] << 24) == bc_data - 1)
			offset = true;
		if ((c[i] & 0xf3) == 0x43 && c[i + 1] == 0x0f && c[i + 2] == 0xb6 &&
		    (c[i + 3] & 0xc7) == 0x04 && (c[i + 4] & 0xf8) == 0x08 && !*bc_reg)
			*bc_reg = 8 + (c[i + 4] & 7);
	}
	return offset;
}

/* The fields V8 7.8 does not export (or exports under another type) into v[]; 0, or
 * -ENOTSUP when its layout does not check out.
 */
static int layout_7_8(struct elf_file *ef, const struct interp_sym *syms, struct v8_file *f,
		      int32_t *v)
{
	int32_t fn, args, length, spt, script;
	int reg;

	if (!sym_int(ef, &syms[S_FP_FUNCTION], &fn) || !sym_int(ef, &syms[S_FP_ARGS_7], &args) ||
	    !sym_int(ef, &syms[S_ARRAY_LENGTH], &length) || !sym_int(ef, &syms[S_BC_SPT_7], &spt) ||
	    !sym_int(ef, &syms[S_SFI_SCRIPT_7], &script) || fn != -2 * 8 || args != 2 * 8 ||
	    spt != length + 3 * 8) {
		pr_debug("v8: %s: V8 7.8's frame or BytecodeArray layout differs\n", f->base.path);
		return -ENOTSUP;
	}
	v[S_FP_BC_ARRAY] = fn - 8;
	v[S_FP_BC_OFFSET] = fn - 2 * 8;
	v[S_SFI_SCRIPT] = script;
	v[S_BC_DATA] = spt + 8 + 14;
	if (!entry_checks(ef, f, v[S_BC_DATA], &reg) || (reg != 12 && reg != 14)) {
		pr_debug("v8: %s: V8 7.8's interpreter entry does not check out\n", f->base.path);
		return -ENOTSUP;
	}
	f->bpf.bc_reg_r14 = reg == 14;
	return 0;
}

/* V8 7.8's Code (its code.h; flags and kinds checked on Node 12.22's code space): the map,
 * relocation info, deoptimisation data, source-position table, CodeDataContainer, 8 bytes
 * each, then the instruction size (i32) and flags (u32: bit 0 unwinding info, the kind in
 * bits 1-5, OPTIMIZED_FUNCTION 0), its instructions from its header's size (64) on. No
 * baseline code. DeoptimizationData: inlined function count 1, literals 2 (a FixedArray),
 * the function 6, inlining positions 7. JSFunction::code follows raw_feedback_cell, 3 words
 * after shared. The instruction size, header size and JSFunction's fields are exported and
 * checked. Nothing set when they do not check out: optimised frames without a line.
 */
static void code_layout_7(struct elf_file *ef, const struct interp_sym *syms, struct v8_file *f)
{
	int32_t t_code, istart, isize, feedback;
	struct v8_proc_abi *b = &f->bpf;

	if (!sym_int(ef, &syms[S_T_CODE], &t_code) || !sym_int(ef, &syms[S_CODE_ISTART], &istart) ||
	    !sym_int(ef, &syms[S_CODE_ISIZE], &isize) ||
	    !sym_int(ef, &syms[S_FN_FEEDBACK_7], &feedback) || isize != 5 * 8 || istart != 64 ||
	    feedback != (int32_t)f->l.fn_shared + 2 * 8 || t_code <= 0 || t_code > 0xffff)
		return;
	f->type_code = (uint16_t)t_code;
	f->code_bc = f->code_deopt = 2 * 8;
	f->code_offsets = f->code_spt = 3 * 8;
	f->code_size = (uint32_t)isize;
	f->dd_inlined_cnt = 1;
	f->dd_literals = 2;
	f->dd_sfi = 6;
	f->dd_inlining = 7;
	b->fn_code = (uint8_t)(f->l.fn_shared + 3 * 8);
	b->code_start = (uint8_t)isize;
	b->code_size = 0;
	b->code_flags = 4;
	b->code_inline = (uint8_t)istart;
	b->kind_mask = 0x3e;
	b->kind_xor = 0x3e; /* OPTIMIZED_FUNCTION (0) compares as 0x3e, nothing else does */
	b->kind_baseline = 0xff;
	b->kind_opt_lo = b->kind_opt_hi = 0x3e;
	b->code_ok = 1;
	jit_layout(ef, syms, f);
}

static int layout_from(struct elf_file *ef, const struct interp_sym *syms, struct v8_file *f)
{
	int32_t v[S_CNT] = { 0 };
	struct v8_layout *l = &f->l;
	struct v8_proc_abi *b = &f->bpf;
	uint32_t bc_spt = 0;
	uint8_t r14;
	bool trusted;
	int i;

	if (v7(f) && layout_7_8(ef, syms, f, v))
		return -ENOTSUP;
	trusted = trusted_sfi(ef, syms, f, v, &bc_spt);
	for (i = 0; i < S_MAJOR; i++) {
		if (trusted && (i == S_SFI_NAME || i == S_SFI_SCRIPT || i == S_SFI_DATA))
			continue;
		if (v7(f) && (i == S_FP_BC_ARRAY || i == S_FP_BC_OFFSET || i == S_SFI_SCRIPT ||
			      i == S_BC_DATA))
			continue; /* layout_7_8 */
		if (!sym_int(ef, &syms[i], &v[i])) {
			pr_debug("v8: %s: no %s\n", f->base.path, sym_names[i]);
			return -ENOTSUP;
		}
	}
	if (!f->blob_hi) {
		pr_debug("v8: %s: embedded builtins not found\n", f->base.path);
		return -ENOTSUP;
	}
	/* 8-byte tagged slots, Smis in the upper half, tag 1: no pointer compression. */
	if (v[S_TAGGED_SIZE] != 8 || v[S_SMI_SHIFT] != 31 || v[S_HEAP_TAG] != 1) {
		pr_debug("v8: %s: pointer compression or another tagging: unsupported\n",
			 f->base.path);
		return -ENOTSUP;
	}
	/* Frame slots within the eBPF window (fp - 48 .. fp + 8), 8-byte aligned. */
	for (i = S_FP_CONTEXT; i <= S_FP_BC_OFFSET; i++)
		if (v[i] >= 0 || v[i] < -48 || v[i] % 8)
			return -ENOTSUP;
	/* BytecodeArray::source_position_table is not exported: length + 3 words since 9.4,
	 * then 3 int32 and the OSR and age fields, which puts the data at + 8 + 14 (V8 11:
	 * two int16) or + 8 + 16 (V8 9.4-10: two int8 and 2 bytes of padding): check that
	 * against the exported data offset.
	 */
	if (!trusted && v[S_ARRAY_LENGTH] + 3 * 8 + 8 + 14 != v[S_BC_DATA] &&
	    ((f->major != 9 && f->major != 10) ||
	     v[S_ARRAY_LENGTH] + 3 * 8 + 8 + 16 != v[S_BC_DATA])) {
		pr_debug("v8: %s: BytecodeArray layout differs from V8 9.4-11\n", f->base.path);
		return -ENOTSUP;
	}
	if (v[S_SFI_SCRIPT] <= v[S_SFI_NAME] || v[S_SFI_SCRIPT] - v[S_SFI_NAME] > 24 ||
	    (v[S_SFI_SCRIPT] - v[S_SFI_NAME]) % 8 || v[S_STR_SEQ] != 0)
		return -ENOTSUP;
	for (i = S_MAP_TYPE; i <= S_SLICED_OFFSET; i++)
		if (v[i] < 0 || v[i] > 4096)
			return -ENOTSUP;
	*l = (struct v8_layout){
		.first_nonstring = (uint16_t)v[S_FIRST_NONSTRING],
		.type_sfi = (uint16_t)v[S_T_SFI],
		.type_script = (uint16_t)v[S_T_SCRIPT],
		.type_scope_info = (uint16_t)v[S_T_SCOPE],
		.type_fixed_array = (uint16_t)v[S_T_FIXED],
		.type_byte_array = (uint16_t)v[S_T_BYTES],
		.type_bytecode = (uint16_t)v[S_T_BC],
		.type_fn_lo = (uint16_t)v[S_T_FN],
		.type_fn_hi = (uint16_t)(v[S_T_FN] + V8_JS_FUNCTION_TYPES - 1),
		.str_repr_mask = (uint16_t)v[S_STR_REPR_MASK],
		.str_enc_mask = (uint16_t)v[S_STR_ENC_MASK],
		.str_seq = (uint16_t)v[S_STR_SEQ],
		.str_cons = (uint16_t)v[S_STR_CONS],
		.str_thin = (uint16_t)v[S_STR_THIN],
		.str_sliced = (uint16_t)v[S_STR_SLICED],
		.str_one_byte = (uint16_t)v[S_STR_ONE_BYTE],
		.map_type = (uint32_t)v[S_MAP_TYPE],
		.fn_shared = (uint32_t)v[S_FN_SHARED],
		.sfi_name = (uint32_t)v[S_SFI_NAME],
		.sfi_script = (uint32_t)v[S_SFI_SCRIPT],
		.sfi_function_data = (uint32_t)v[S_SFI_DATA],
		.script_name = (uint32_t)v[S_SCRIPT_NAME],
		.script_source = (uint32_t)v[S_SCRIPT_SOURCE],
		.script_line_ends = (uint32_t)v[S_SCRIPT_LINE_ENDS],
		.array_length = (uint32_t)v[S_ARRAY_LENGTH],
		.fixed_data = (uint32_t)v[S_FIXED_DATA],
		.bc_spt = (uint32_t)(v[S_ARRAY_LENGTH] + 3 * 8),
		.bc_data = (uint32_t)v[S_BC_DATA],
		.str_length = (uint32_t)v[S_STR_LENGTH],
		.seq_chars = (uint32_t)v[S_SEQ_CHARS],
		.cons_first = (uint32_t)v[S_CONS_FIRST],
		.cons_second = (uint32_t)v[S_CONS_SECOND],
		.thin_actual = (uint32_t)v[S_THIN_ACTUAL],
		.sliced_parent = (uint32_t)v[S_SLICED_PARENT],
		.sliced_offset = (uint32_t)v[S_SLICED_OFFSET],
		.scope_first_vars = (uint32_t)v[S_SCOPE_FIRST_VARS],
		.scope_ncontext_locals = (uint32_t)v[S_SCOPE_NCL],
		.scope_function = 2,
		.scope_class = 0,
	};
	r14 = b->bc_reg_r14; /* layout_7_8's */
	*b = (struct v8_proc_abi){
		.supported = 1,
		.fp_context = (int8_t)v[S_FP_CONTEXT],
		.fp_function = (int8_t)v[S_FP_FUNCTION],
		.fp_bytecode_array = (int8_t)v[S_FP_BC_ARRAY],
		.fp_bytecode_offset = (int8_t)v[S_FP_BC_OFFSET],
		.map_type = (uint8_t)l->map_type,
		.fn_shared = (uint8_t)l->fn_shared,
		.sfi_name = (uint8_t)l->sfi_name,
		.sfi_script_word = (uint8_t)((l->sfi_script - l->sfi_name) / 8),
		.bc_data = (uint8_t)l->bc_data,
		.type_fn_lo = l->type_fn_lo,
		.type_fn_hi = l->type_fn_hi,
		.type_bytecode = l->type_bytecode,
	};
	if (v7(f)) {
		int32_t t;

		l->scope_7 = true;
		if (sym_int(ef, &syms[S_T_SPT_CACHE_7], &t) && t > 0 && t < 0xffff)
			l->type_spt_cache = (uint16_t)t;
		b->bc_reg_r14 = r14;
		code_layout_7(ef, syms, f);
		external_layout(ef, syms, f);
		return 0;
	}
	if (trusted) {
		l->bc_spt = bc_spt;
		trusted_scope_layout(f);
		trusted_code_layout(ef, syms, f);
	} else {
		baseline_layout(ef, syms, f);
	}
	external_layout(ef, syms, f);
	return 0;
}

/* The version, from v8::internal::Version's major_, minor_ and build_ (kept in the dynamic
 * symbols of every node and libnode seen: Debian 11-13 and unstable, NodeSource's); 0.0
 * when absent.
 */
static void version_from(struct elf_file *ef, const struct interp_sym *syms, struct v8_file *f)
{
	int32_t v[3];

	if (sym_int(ef, &syms[S_MAJOR], &v[0]) && sym_int(ef, &syms[S_MINOR], &v[1]) &&
	    sym_int(ef, &syms[S_BUILD], &v[2]) && v[0] > 0 && v[0] < 100 && v[1] >= 0 &&
	    v[1] < 100 && v[2] >= 0) {
		f->major = v[0];
		f->minor = v[1];
		f->build = v[2];
	}
}

/* The embedded builtins (blob_lo/hi) and the bytecode handlers among them (handlers_lo/hi:
 * from the first, WideHandler, to the blob's end): from their symbols when the binary has
 * them (NodeSource's node), else from the binary's own tables (v8_blob.h: Debian's
 * libnode). Handlers unknown: none (the walk then takes no leaf offset from r9).
 */
static void blob_from(struct elf_file *ef, const struct interp_sym *syms, struct v8_file *f)
{
	int32_t size;
	int err;

	if (syms[S_BLOB].found && syms[S_WIDE_HANDLER].found &&
	    sym_int(ef, &syms[S_BLOB_SIZE], &size) && size > 0 &&
	    syms[S_WIDE_HANDLER].addr > syms[S_BLOB].addr &&
	    syms[S_WIDE_HANDLER].addr < syms[S_BLOB].addr + (uint64_t)size) {
		f->blob_lo = syms[S_BLOB].addr;
		f->blob_hi = f->handlers_hi = syms[S_BLOB].addr + (uint64_t)size;
		f->handlers_lo = syms[S_WIDE_HANDLER].addr;
		return;
	}
	if ((err = v8_blob__find(ef, &f->blob))) {
		pr_debug("v8: %s: embedded builtins not found (%d)\n", f->base.path, err);
		return;
	}
	f->blob_lo = f->blob.code;
	f->blob_hi = f->blob.code + f->blob.code_sz;
	if (f->blob.handlers_lo) {
		f->handlers_lo = f->blob.handlers_lo;
		f->handlers_hi = f->blob_hi;
	}
	pr_debug("v8: %s: builtins %#llx-%#llx (%zu, %s), handlers from %#llx\n", f->base.path,
		 (unsigned long long)f->blob_lo, (unsigned long long)f->blob_hi,
		 f->blob.builtin_cnt, f->blob.names ? "named" : "no names",
		 (unsigned long long)f->handlers_lo);
}

/* The frame types' numbers, from the binary's v8dbg_frametype_* (absent: the type is not
 * named).
 */
static void frame_types_from(struct elf_file *ef, struct v8_file *f)
{
	const char *names[V8_FRAME_TYPES];
	struct interp_sym syms[V8_FRAME_TYPES];
	int32_t type;
	size_t i;

	for (i = 0; i < V8_FRAME_TYPES; i++)
		names[i] = frame_types[i].sym;
	interp_elf__symbols(ef, names, V8_FRAME_TYPES, syms);
	for (i = 0; i < V8_FRAME_TYPES; i++)
		if (sym_int(ef, &syms[i], &type) && type > 0 && type < V8_FRAME_TYPE_MAX &&
		    !f->frame_shown[type])
			f->frame_shown[type] = frame_types[i].shown;
}

/* arm64: JSEntry (Generate_JSEntryVariant) pushes the C++ caller's callee-saved registers, 16
 * bytes a `stp ..., [sp, #-16]!`, then its frame record (`stp x29, x30, [sp, #-16]!`, then
 * `mov x29, sp` within a few instructions): the caller's sp is that many pairs above fp. Read
 * from the builtin's own prologue (V8 10.2: 9 pairs, x19-x28 and d8-d15, entry_sp 160), with
 * the entry frame types from v8dbg_frametype_{,Construct}EntryFrame; nothing set when either
 * does not check out (the native step then, as on x86-64).
 */
#define A64_STP_PRE16_MASK 0xffff83e0u /* stp Xa, Xb (or Da, Db), [sp, #-16]! */
#define A64_STP_PRE16_X 0xa9bf03e0u
#define A64_STP_PRE16_D 0x6dbf03e0u
#define A64_STP_FP_LR 0xa9bf7bfdu
#define A64_MOV_FP_SP 0x910003fdu

static void entry_frames_from(struct elf_file *ef, struct v8_file *f)
{
	static const char *const names[] = { "v8dbg_frametype_EntryFrame",
					     "v8dbg_frametype_ConstructEntryFrame" };
	struct interp_sym syms[2];
	const uint8_t *c;
	size_t n, i, k, pairs = 0;
	uint8_t types = 0;
	int32_t type;

	if (elf_file__machine(ef) != EM_AARCH64 || !f->bpf.supported ||
	    !(c = builtin_bytes(ef, f, "JSEntry", &n)))
		return;
	interp_elf__symbols(ef, names, 2, syms);
	for (i = 0; i < 2; i++)
		if (sym_int(ef, &syms[i], &type) && type > 0 && type < 8)
			types |= (uint8_t)(1u << type);
	for (i = 0; i + 4 <= n && i < 64; i += 4) {
		uint32_t w = load_u32(c + i);

		if (w == A64_STP_FP_LR)
			break;
		if ((w & A64_STP_PRE16_MASK) != A64_STP_PRE16_X &&
		    (w & A64_STP_PRE16_MASK) != A64_STP_PRE16_D)
			return;
		pairs++;
	}
	if (i + 4 > n || i >= 64 || !types)
		return;
	for (k = i + 4; k + 4 <= n && k <= i + 16; k += 4)
		if (load_u32(c + k) == A64_MOV_FP_SP) {
			f->bpf.entry_sp = (uint8_t)(16 * (pairs + 1));
			f->bpf.entry_types = types;
			return;
		}
}

static int v8_file_detect(void *rt, const struct executable *exe, void *file_state,
			  struct interp_file *bpf)
{
	struct interp_sym syms[S_CNT];
	struct v8_file *f = file_state;

	(void)rt;
	if (!exe->elf || !name_is_node(exe->path))
		return -ENOENT;
	interp_elf__symbols(exe->elf, sym_names, S_CNT, syms);
	if (!syms[S_FP_FUNCTION].found && !syms[S_BLOB].found)
		return -ENOENT; /* no V8 in it (a launcher script's interpreter, a stub) */
	version_from(exe->elf, syms, f);
	blob_from(exe->elf, syms, f);
	bpf->supported = layout_from(exe->elf, syms, f) ? 0 : 1;
	bpf->major = (uint8_t)f->major;
	bpf->minor = (uint8_t)f->minor;
	/* The embedded builtins: the interpreter's trampoline and handlers, JS builtins. */
	if (f->blob_hi) {
		bpf->range_start[0] = f->blob_lo;
		bpf->range_end[0] = f->blob_hi;
	}
	if (!bpf->supported)
		f->bpf.supported = 0;
	frame_types_from(exe->elf, f);
	entry_frames_from(exe->elf, f);
	pr_debug("v8: %s: V8 %d.%d.%d, metadata %s\n", f->base.path, f->major, f->minor, f->build,
		 bpf->supported ? "usable" : "unusable");
	return 0;
}

static void v8_file_free(void *rt, void *file_state)
{
	struct v8_file *f = file_state;

	(void)rt;
	v8_blob__free(&f->blob);
}

/* A builtin of a binary without their symbols, by the name V8 gives it ("[v8] JSEntry"). */
static const char *v8_code_name(void *rt, void *file_state, uint64_t vaddr)
{
	const struct v8_file *f = file_state;

	(void)rt;
	return v8_blob__name(&f->blob, vaddr);
}

/* ---- processes ---- */

static int v8_proc_attach(void *rt, void *file_state, uint64_t bias, uint64_t now_ns,
			  void *proc_state, struct interp_proc *bpf)
{
	struct v8_file *f = file_state;
	struct v8_proc *p = proc_state;

	(void)rt, (void)now_ns;
	p->bias = bias;
	p->file = f;
	bpf->v8 = f->bpf;
	bpf->v8.handlers_lo = f->handlers_lo + bias;
	bpf->v8.handlers_hi = f->handlers_hi + bias;
	return 0;
}

static bool anon(const struct proc_map *m)
{
	return !m->ino && !m->path[0];
}

/* The anonymous executable mappings of the process (V8's code space: only processes that
 * run V8 get here), each widened over the anonymous mappings it touches, up to
 * V8_CODE_RESERVE on either side: V8 reserves its code range (128 MiB on x86-64) up front
 * and commits pages in it as it compiles, so the pages committed later are covered at
 * once rather than at the next refresh (a pc there is JIT code or nothing: inaccessible
 * reserved pages never run). Ranges closer than V8_CODE_CLUSTER are merged; at most
 * INTERP_CODE_RANGES are kept.
 */
static int code_ranges(pid_t pid, struct interp_code_range *out)
{
	struct proc_maps maps = { 0 };
	size_t i, j, n = 0;
	int err;

	if ((err = proc_maps__read(pid, NULL, &maps)))
		return err;
	for (i = 0; i < maps.cnt; i++) {
		const struct proc_map *m = &maps.maps[i];
		uint64_t start = m->start, end = m->end;

		if (!(m->perms & PROC_MAP_EXEC) || !anon(m))
			continue;
		for (j = i; j > 0 && anon(&maps.maps[j - 1]) && maps.maps[j - 1].end == start &&
			    m->start - start < V8_CODE_RESERVE;
		     j--)
			start = maps.maps[j - 1].start;
		if (m->start - start > V8_CODE_RESERVE)
			start = m->start - V8_CODE_RESERVE;
		for (j = i + 1; j < maps.cnt && anon(&maps.maps[j]) && maps.maps[j].start == end &&
				end - start < V8_CODE_RESERVE;
		     j++)
			end = maps.maps[j].end;
		if (end - start > V8_CODE_RESERVE && m->end <= start + V8_CODE_RESERVE)
			end = start + V8_CODE_RESERVE;
		if (n && start < out[n - 1].end + V8_CODE_CLUSTER) {
			if (end > out[n - 1].end) /* maps are sorted by address */
				out[n - 1].end = end;
			continue;
		}
		if (n == INTERP_CODE_RANGES)
			break; /* the rest is left out */
		out[n++] = (struct interp_code_range){ .start = start, .end = end };
	}
	proc_maps__free(&maps);
	return 0;
}

static int v8_proc_refresh(void *rt, void *proc_state, uint64_t now_ns, struct interp_proc *bpf,
			   struct interp_code_range *code)
{
	struct v8_proc *p = proc_state;
	struct interp_code_range fresh[INTERP_CODE_RANGES] = { 0 };

	(void)rt;
	(void)bpf;
	if (!p->file->bpf.supported ||
	    (p->last_maps_ns &&
	     now_ns - p->last_maps_ns < (p->code[0].end ? V8_REFRESH_NS : V8_FIRST_REFRESH_NS)))
		return 0;
	p->last_maps_ns = now_ns;
	if (code_ranges(p->base.pid, fresh) || !memcmp(fresh, p->code, sizeof(fresh)))
		return 0;
	memcpy(p->code, fresh, sizeof(fresh));
	memcpy(code, fresh, sizeof(fresh));
	pr_debug("v8: pid %d: code %#llx-%#llx\n", (int)p->base.pid,
		 (unsigned long long)fresh[0].start, (unsigned long long)fresh[0].end);
	return 1;
}

/* ---- symbolization ---- */

/* The slot of a cache (its index: slots) for an object of the process. */
static size_t cache_slot(struct lru_sets *slots, const struct v8_proc *p, uint64_t addr)
{
	return lru_sets__slot(slots,
			      u64_hash(addr ^ u64_hash((uint64_t)p->base.pid << 32 | p->base.gen)));
}

static const struct interp_marker_text marker_texts[] = {
	{ V8_MARKER_UNSUPPORTED, "unsupported V8" },
	{ V8_MARKER_TRUNCATED, "more frames truncated" },
	{ V8_MARKER_BAD_FRAME, "unknown frame" },
};

/* What a function's ScopeInfo says of its name (scope_info_facts). */
struct scope_facts {
	char *name; /* out: V8's name ("" when none), at most cap - 1 bytes */
	size_t cap;
	int64_t start;  /* the function's start position in its script, -1: unknown */
	bool method;    /* a method (class or object literal; getters, setters, static) */
	uint64_t outer; /* the outer ScopeInfo when it is a class scope (0: none) */
};

/* A method's kind (V8 11's FunctionKind: getters/setters 7-10, async and generator methods
 * 14-17 and 20-21, concise methods 22-23).
 */
static bool kind_is_method(uint64_t kind)
{
	return (kind >= 7 && kind <= 10) || (kind >= 14 && kind <= 17) ||
	       (kind >= 20 && kind <= 23);
}

/* A ScopeInfo's flags from its first field: a Smi, or V8 12.8+'s raw uint32
 * (l->scope_raw_flags); false when it is not one.
 */
static bool scope_flags(const struct v8_layout *l, uint64_t word, uint64_t *flags)
{
	if (l->scope_raw_flags) {
		*flags = (uint32_t)word;
		return true;
	}
	*flags = word >> 32;
	return !(word & 1);
}

/* A source-position table that V8 7.8 wrapped with its stack frame cache
 * (SourcePositionTableWithFrameCache: map, then the table) replaced by the table; 0 or
 * -EFAULT.
 */
static int spt_unwrap(pid_t pid, const struct v8_layout *l, uint64_t *spt)
{
	uint16_t type;

	if (!l->type_spt_cache || v8_heap__type(pid, l, *spt, &type) || type != l->type_spt_cache)
		return 0;
	return interp__read_u64(pid, *spt - 1 + 8, spt) ? -EFAULT : 0;
}

/* V8 7.8's ScopeInfo (its scope-info.h; checked on Node 12.22's functions), a FixedArray:
 * flags, parameter count, context local count, the local names and infos, the receiver's
 * slot when it is on the stack or in the context (flags bits 7-8: 1 or 2), the function
 * variable's name and slot (bits 11-12 not NONE), the inferred name (bit 13), the position
 * info (start, end) of a function scope (type 2, bits 0-3). Its function kinds are not read:
 * a method keeps its name alone. 0 with *sf filled, or -errno.
 */
static int scope_info_facts_7(pid_t pid, const struct v8_layout *l, uint64_t scope,
			      struct scope_facts *sf)
{
	uint64_t slots[V8_SCOPE_SLOTS], ncl, flags, i, receiver;
	char *out = sf->name;
	uint16_t type;

	out[0] = '\0';
	sf->start = -1;
	sf->outer = 0;
	sf->method = false;
	if (l->scope_ncontext_locals >= V8_SCOPE_SLOTS ||
	    interp__read_mem(pid, scope - 1 + l->fixed_data, slots, sizeof(slots)))
		return -EFAULT;
	if ((slots[0] & 1) || (slots[l->scope_ncontext_locals] & 1))
		return -EINVAL;
	flags = slots[0] >> 32;
	ncl = slots[l->scope_ncontext_locals] >> 32;
	receiver = flags >> 7 & 3;
	i = l->scope_first_vars + 2 * ncl + (receiver == 1 || receiver == 2);
	if (flags >> 11 & 3) { /* the function variable: name (or Smi 0), slot */
		if (i < V8_SCOPE_SLOTS && !v8_heap__type(pid, l, slots[i], &type) &&
		    type < l->first_nonstring && v8_heap__string(pid, l, slots[i], out, sf->cap))
			out[0] = '\0';
		i += 2;
	}
	if (flags >> 13 & 1) { /* the inferred name, when the function has none */
		if (!out[0] && i < V8_SCOPE_SLOTS && !v8_heap__type(pid, l, slots[i], &type) &&
		    type < l->first_nonstring && v8_heap__string(pid, l, slots[i], out, sf->cap))
			out[0] = '\0';
		i++;
	}
	if ((flags & 0xf) != 2 || i + 1 >= V8_SCOPE_SLOTS || (slots[i] & 1))
		return 0; /* positions: function scopes only */
	sf->start = (int64_t)(slots[i] >> 32);
	return 0;
}

/* The function name a ScopeInfo holds (V8's SharedFunctionInfo::Name, then the inferred
 * name V8 shows for anonymous functions, "Module._compile"), at the exact slots V8's
 * scope-info.tq (9.x-11.x) gives: flags, parameter count, context local count, local names
 * (one hash table instead when there are V8_INLINED_LOCALS_MAX or more), local infos, the
 * saved class variable (flags bit 10), the function variable's name and slot (flags bits
 * 12-13 not NONE), the inferred name (flags bit 14), the position info (start, end) of a
 * function scope (type 2, flags bits 0-3), the outer ScopeInfo (flags bit 22); the function
 * kind in flags bits 17-21. A slot that holds no string gives no name: nothing is guessed.
 * 0 with *sf filled, or -errno.
 */
static int scope_info_facts(pid_t pid, const struct v8_layout *l, uint64_t scope,
			    struct scope_facts *sf)
{
	uint64_t slots[V8_SCOPE_SLOTS], ncl, flags, i, outer[V8_SCOPE_SLOTS];
	char *out = sf->name;
	uint16_t type;

	if (l->scope_7)
		return scope_info_facts_7(pid, l, scope, sf);
	out[0] = '\0';
	sf->start = -1;
	sf->outer = 0;
	if (l->scope_ncontext_locals >= V8_SCOPE_SLOTS ||
	    interp__read_mem(pid, scope - 1 + 8, slots, sizeof(slots)))
		return -EFAULT;
	if (!scope_flags(l, slots[0], &flags) || (slots[l->scope_ncontext_locals] & 1))
		return -EINVAL;
	ncl = slots[l->scope_ncontext_locals] >> 32;
	sf->method = kind_is_method(flags >> 17 & 0x1f);
	i = l->scope_first_vars + (ncl < V8_INLINED_LOCALS_MAX ? ncl : 1) + ncl + (flags >> 10 & 1);
	if (flags >> 12 & 3) { /* the function variable: name (or Smi 0), slot */
		if (i < V8_SCOPE_SLOTS && !v8_heap__type(pid, l, slots[i], &type) &&
		    type < l->first_nonstring && v8_heap__string(pid, l, slots[i], out, sf->cap))
			out[0] = '\0';
		i += 2;
	}
	if (flags >> 14 & 1) { /* the inferred name, when the function has none */
		if (!out[0] && i < V8_SCOPE_SLOTS && !v8_heap__type(pid, l, slots[i], &type) &&
		    type < l->first_nonstring && v8_heap__string(pid, l, slots[i], out, sf->cap))
			out[0] = '\0';
		i++;
	}
	if ((flags & 0xf) != l->scope_function || i + 2 >= V8_SCOPE_SLOTS)
		return 0;         /* positions: function scopes only */
	if (l->scope_positions) { /* V8 12.8+: at fixed slots, before the variables */
		if (!(slots[l->scope_positions] & 1))
			sf->start = (int64_t)(slots[l->scope_positions] >> 32);
	} else {
		if (slots[i] & 1)
			return 0;
		sf->start = (int64_t)(slots[i] >> 32);
		i += 2;
	}
	/* The outer scope: a class scope of a method. */
	if (!(flags >> 22 & 1) || !sf->method || v8_heap__type(pid, l, slots[i], &type) ||
	    type != l->type_scope_info ||
	    interp__read_mem(pid, slots[i] - 1 + 8, outer, sizeof(outer)) ||
	    !scope_flags(l, outer[0], &flags) || (flags & 0xf) != l->scope_class)
		return 0;
	sf->outer = slots[i];
	return 0;
}

/* The class name a class scope's ScopeInfo holds: the saved class variable (flags bit 10:
 * its index among the context locals) or the first context local that is no private name
 * ('#') nor internal ('.'); 0, or -ENOENT.
 */
static int class_scope_name(pid_t pid, const struct v8_layout *l, uint64_t scope, char *out,
			    size_t cap)
{
	uint64_t slots[V8_SCOPE_SLOTS], ncl, flags, k, first, saved = ~0ULL;
	uint16_t type;

	if (interp__read_mem(pid, scope - 1 + 8, slots, sizeof(slots)) ||
	    !scope_flags(l, slots[0], &flags) || (slots[l->scope_ncontext_locals] & 1))
		return -EFAULT;
	ncl = slots[l->scope_ncontext_locals] >> 32;
	first = l->scope_first_vars;
	if (!ncl || ncl >= V8_INLINED_LOCALS_MAX || first + 2 * ncl + 1 > V8_SCOPE_SLOTS)
		return -ENOENT;
	if (flags >> 10 & 1 && !(slots[first + 2 * ncl] & 1))
		saved = slots[first + 2 * ncl] >> 32;
	for (k = 0; k < ncl; k++) {
		if (saved != ~0ULL && k != saved)
			continue;
		if (v8_heap__type(pid, l, slots[first + k], &type) || type >= l->first_nonstring ||
		    v8_heap__string(pid, l, slots[first + k], out, cap) || !out[0] ||
		    out[0] == '#' || out[0] == '.')
			continue;
		return 0;
	}
	out[0] = '\0';
	return -ENOENT;
}

/* A method's class from its source, when its ScopeInfo has no class scope (a class that
 * never refers to itself needs none): before the function's start position, the innermost
 * unclosed '{' must end "class NAME" or "class NAME extends ...". Braces in strings or
 * comments between the two are not told apart: such a method gets no class. The first
 * V8_CLASS_SCAN characters of a script are read at most. 0 with out, or -ENOENT.
 */
static int class_from_source(pid_t pid, const struct v8_layout *l, uint64_t script, int64_t start,
			     char *out, size_t cap)
{
	uint64_t source;
	uint8_t *chars = NULL;
	size_t n = 0, csize = 1, k, depth = 0, b, e, m;
	int err = -ENOENT;

	if (start <= 0 || start > V8_CLASS_SCAN ||
	    interp__read_u64(pid, script - 1 + l->script_source, &source) ||
	    v8_heap__seq_chars(pid, l, source, (size_t)start, &chars, &n, &csize))
		return -ENOENT;
#define CH(i) (csize == 2 ? ((const uint16_t *)chars)[i] : chars[i])
	for (k = n; k-- > 0;) {
		if (CH(k) == '}')
			depth++;
		else if (CH(k) == '{' && depth-- == 0)
			break;
	}
	if (k >= n)
		goto out;
	/* back over "extends ..." and spaces to the name, then "class" */
	for (b = k; b > 0 && b + 512 > k; b--) {
		if (b >= 6 && CH(b - 1) == ' ' && CH(b - 2) == 's' && CH(b - 3) == 's' &&
		    CH(b - 4) == 'a' && CH(b - 5) == 'l' && CH(b - 6) == 'c' &&
		    (b == 6 || CH(b - 7) <= ' ' || CH(b - 7) == '=' || CH(b - 7) == '(')) {
			for (e = b; e < k && (CH(e) == '_' || CH(e) == '$' ||
					      (CH(e) >= '0' && CH(e) <= '9') ||
					      ((CH(e) | 0x20) >= 'a' && (CH(e) | 0x20) <= 'z'));
			     e++)
				;
			if (e == b || e - b >= cap)
				goto out;
			for (m = b; m < e; m++)
				out[m - b] = (char)CH(m);
			out[e - b] = '\0';
			err = 0;
			goto out;
		}
		if (CH(b - 1) == ';' || CH(b - 1) == '}' || CH(b - 1) == '{')
			break;
	}
out:
#undef CH
	free(chars);
	return err;
}

/* The script's name and line ends, read if needed; NULL when unreadable. */
static struct script_entry *script_get(struct v8 *v, struct v8_proc *p, pid_t reader,
				       uint64_t script)
{
	const struct v8_layout *l = &p->file->l;
	struct script_entry *e = &v->scripts[cache_slot(&v->script_slots, p, script)],
			    fresh = { 0 };
	uint64_t name, ends, source, data;
	uint8_t *chars = NULL;
	size_t n = 0, csize = 1, i;
	uint32_t tries = 0;
	struct timespec ts;
	uint64_t now, start;
	int err = -EFAULT;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	now = (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
	if (e->pid == p->base.pid && e->gen == p->base.gen && e->script == script) {
		if (e->lines || (e->tries >= V8_SCRIPT_TRIES && ++e->lookups % V8_RETRY_EVERY &&
				 (e->external || now - e->read_ns < V8_SCRIPT_RETRY_NS)))
			return e;
		tries = e->tries; /* a failed read of the line ends is not kept for good */
	}
	if (!symbol_cache__budget_begin(&p->base, &start)) {
		v->stats[V8_STAT_READS_OVER_BUDGET]++;
		return NULL; /* no file and no line for the frame; tried again next time */
	}
	v->stats[V8_STAT_SCRIPT_READS]++;
	if (interp__read_u64(reader, script - 1 + l->script_name, &name) ||
	    v8_heap__string(reader, l, name, v->text, sizeof(v->text))) {
		symbol_cache__budget_end(&p->base, start);
		v->stats[V8_STAT_UNREADABLE]++;
		return NULL; /* no file and no line for the frame; tried again next time */
	}
	fresh.name = strdup(v->text);
	if (!fresh.name) {
		symbol_cache__budget_end(&p->base, start);
		return NULL;
	}
	/* Line ends: V8's own when it has computed them, else from the source. */
	if (!interp__read_u64(reader, script - 1 + l->script_line_ends, &ends) &&
	    !v8_heap__array(reader, l, ends, l->type_fixed_array, &data, &n) && n &&
	    n <= V8_LINES_MAX && (fresh.line_ends = calloc(n, sizeof(uint32_t)))) {
		uint64_t *words = calloc(n, sizeof(uint64_t));

		if (words && !interp__read_mem(reader, data, words, n * 8)) {
			for (i = 0; i < n; i++)
				fresh.line_ends[i] = (uint32_t)(words[i] >> 32);
			fresh.lines = n;
		}
		free(words);
	}
	if (!fresh.lines && !interp__read_u64(reader, script - 1 + l->script_source, &source) &&
	    !(err = v8_heap__seq_chars(reader, l, source, V8_SOURCE_MAX, &chars, &n, &csize))) {
		free(fresh.line_ends);
		fresh.line_ends = calloc(V8_LINES_MAX, sizeof(uint32_t));
		if (fresh.line_ends)
			fresh.lines =
				v8_lines__line_ends(chars, n, csize, fresh.line_ends, V8_LINES_MAX);
		free(chars);
	}
	symbol_cache__budget_end(&p->base, start);
	if (fresh.lines) { /* computed into V8_LINES_MAX entries: keep what it holds */
		uint32_t *fit = realloc(fresh.line_ends, fresh.lines * sizeof(uint32_t));

		if (fit)
			fresh.line_ends = fit;
	}
	if (!budget_take(v, e->lines * sizeof(uint32_t), fresh.lines * sizeof(uint32_t)))
		fresh.lines = 0;
	if (!fresh.lines) {
		free(fresh.line_ends);
		fresh.line_ends = NULL;
	}
	script_entry__clear(e);
	*e = fresh;
	e->pid = p->base.pid;
	e->gen = p->base.gen;
	e->script = script;
	e->tries = fresh.lines ? 0 : tries + 1;
	e->read_ns = now;
	e->external = !fresh.lines && err == -ENOTSUP;
	return e;
}

/* The cookie eBPF computes (bpf/interp/v8/bpf_abi.h) from the SharedFunctionInfo's words. */
static int sfi_cookie(pid_t pid, const struct v8_layout *l, uint64_t sfi, uint64_t *name,
		      uint64_t *script, uint32_t *cookie)
{
	if (interp__read_u64(pid, sfi - 1 + l->sfi_name, name) ||
	    interp__read_u64(pid, sfi - 1 + l->sfi_script, script))
		return -EFAULT;
	*cookie = (uint32_t)(*name ^ *script >> 3);
	return 0;
}

/* The bytecode's source-position table of a function (copied), when it has bytecode. */
static void read_spt(pid_t pid, const struct v8_file *f, uint64_t sfi, struct sfi_entry *e)
{
	const struct v8_layout *l = &f->l;
	uint64_t bc, spt, data;
	uint16_t type;
	size_t len;

	if (interp__read_u64(pid, sfi - 1 + l->sfi_function_data, &bc) ||
	    v8_heap__type(pid, l, bc, &type))
		return;
	/* Baseline code in its place: the bytecode is the code's. */
	if (f->bpf.code_ok && type == f->type_code &&
	    (interp__read_u64(pid, bc - 1 + f->code_bc, &bc) || v8_heap__type(pid, l, bc, &type)))
		return;
	/* An InterpreterData (the function has its own copy of the interpreter's entry,
	 * --interpreted-frames-native-stack): its first field, the BytecodeArray (V8 9-11's
	 * interpreter-data.tq), checked by its type below.
	 */
	if (type != l->type_bytecode && type != f->type_code &&
	    (interp__read_u64(pid, bc - 1 + 8, &bc) || v8_heap__type(pid, l, bc, &type)))
		return;
	if (type != l->type_bytecode || interp__read_u64(pid, bc - 1 + l->bc_spt, &spt) ||
	    spt_unwrap(pid, l, &spt) ||
	    v8_heap__array(pid, l, spt, l->type_byte_array, &data, &len) || !len ||
	    len > V8_SPT_MAX || !(e->spt = malloc(len)))
		return;
	if (interp__read_mem(pid, data, e->spt, len)) {
		free(e->spt);
		e->spt = NULL;
		return;
	}
	e->spt_len = len;
}

/* The bytes of the ByteArray or BytecodeArray at tagged obj (at most max) into a new buffer. */
static int read_bytes(pid_t pid, const struct v8_layout *l, uint64_t obj, uint16_t type, size_t max,
		      uint8_t **out, size_t *len)
{
	uint64_t data;
	size_t n;

	if (v8_heap__array(pid, l, obj, type, &data, &n) || !n || n > max)
		return -EFAULT;
	if (type == l->type_bytecode)
		data = obj - 1 + l->bc_data;
	if (!(*out = malloc(n)))
		return -ENOMEM;
	if (interp__read_mem(pid, data, *out, n)) {
		free(*out);
		*out = NULL;
		return -EFAULT;
	}
	*len = n;
	return 0;
}

/* The function's current baseline code (SharedFunctionInfo::function_data holds it while
 * it has one): its size, bytecode-offset table and bytecodes, into e.
 */
static void read_baseline(pid_t pid, const struct v8_file *f, struct sfi_entry *e, uint64_t code)
{
	const struct v8_layout *l = &f->l;
	uint64_t table, bc;
	uint16_t type;

	baseline__clear(e);
	e->code_read = true;
	if ((!code && interp__read_u64(pid, e->sfi - 1 + l->sfi_function_data, &code)) ||
	    v8_heap__type(pid, l, code, &type) || type != f->type_code ||
	    interp__read_mem(pid, code - 1 + f->code_size, &e->code_size, sizeof(e->code_size)) ||
	    e->code_size <= 0 || interp__read_u64(pid, code - 1 + f->code_offsets, &table) ||
	    interp__read_u64(pid, code - 1 + f->code_bc, &bc) ||
	    read_bytes(pid, l, table, l->type_byte_array, V8_SPT_MAX, &e->offsets,
		       &e->offsets_len) ||
	    read_bytes(pid, l, bc, l->type_bytecode, V8_BYTECODE_MAX, &e->bytecodes,
		       &e->bytecodes_len)) {
		baseline__clear(e);
		e->code_read = true;
		return;
	}
	e->code = code;
}

/* The function of baseline code found by pc (V8_SUB_JIT): its bytecode offset at pc_off
 * (the code's tables read into e when e holds another code), or -1.
 */
static int64_t baseline_offset_of(struct v8 *v, struct v8_proc *p, pid_t reader,
				  struct sfi_entry *e, uint64_t code, uint64_t pc_off,
				  bool is_return)
{
	const struct v8_file *f = p->file;

	if (!f->bc_sizes) /* V8 12.4-13.6 without .symtab: no bytecode sizes */
		return -1;
	if (!e->code_read || e->code != code) {
		size_t old = e->offsets_len + e->bytecodes_len;

		read_baseline(reader, f, e, code);
		if (!budget_take(v, old, e->offsets_len + e->bytecodes_len)) {
			baseline__clear(e);
			e->code_read = true;
		}
	}
	if (e->code != code || pc_off >= (uint64_t)e->code_size)
		return -1;
	return v8_lines__baseline_offset(e->offsets, e->offsets_len, e->bytecodes, e->bytecodes_len,
					 f->bc_sizes, f->n_bytecodes,
					 is_return ? pc_off : pc_off + 1);
}

/* The bytecode offset of a baseline frame (pos as eBPF emitted it), or -1. */
static int64_t baseline_offset(struct v8 *v, struct v8_proc *p, pid_t reader, struct sfi_entry *e,
			       uint32_t pos, bool is_return)
{
	uint32_t check = pos >> V8_BASELINE_CHECK_SHIFT & 0xff;
	uint64_t pc_off = pos & (V8_BASELINE_PC_MAX - 1);
	const struct v8_file *f = p->file;

	if (!f->bpf.code_ok || !f->bc_sizes)
		return -1;
	/* Read again once when the code eBPF saw is not the one cached (recompiled). */
	if (!e->code_read || (e->code >> 3 & 0xff) != check) {
		size_t old = e->offsets_len + e->bytecodes_len;

		read_baseline(reader, f, e, 0);
		if (!budget_take(v, old, e->offsets_len + e->bytecodes_len)) {
			baseline__clear(e);
			e->code_read = true;
		}
	}
	if (!e->code || (e->code >> 3 & 0xff) != check || pc_off >= (uint64_t)e->code_size) {
		v->stats[V8_STAT_BASELINE_REPLACED]++;
		return -1;
	}
	/* A return address ends its bytecode's range; a sampled pc starts an instruction. */
	return v8_lines__baseline_offset(e->offsets, e->offsets_len, e->bytecodes, e->bytecodes_len,
					 f->bc_sizes, f->n_bytecodes,
					 is_return ? pc_off : pc_off + 1);
}

/* Read a function (name, script, position table); 0, -EFAULT unreadable, -ESTALE moved. */
static int read_sfi(pid_t pid, const struct v8_file *f, uint64_t sfi, uint32_t cookie, char *text,
		    size_t cap, struct sfi_entry *e)
{
	const struct v8_layout *l = &f->l;
	struct scope_facts sf = { .name = text, .cap = cap, .start = -1 };
	char cls[V8_CLASS_NAME_MAX] = "";
	uint64_t name, script;
	uint16_t type;
	uint32_t c;

	if (v8_heap__type(pid, l, sfi, &type) || sfi_cookie(pid, l, sfi, &name, &script, &c))
		return -EFAULT;
	if (type != l->type_sfi || c != cookie)
		return -ESTALE;
	if (!v8_heap__type(pid, l, script, &type) && type == l->type_script)
		e->script = script;
	text[0] = '\0';
	e->start = -1;
	if (!v8_heap__type(pid, l, name, &type)) {
		if (type < l->first_nonstring)
			v8_heap__string(pid, l, name, text, cap);
		else if (type == l->type_scope_info && !scope_info_facts(pid, l, name, &sf) &&
			 sf.method && text[0] &&
			 (!sf.outer || class_scope_name(pid, l, sf.outer, cls, sizeof(cls))) &&
			 e->script)
			class_from_source(pid, l, e->script, sf.start, cls, sizeof(cls));
	}
	if (cls[0] && text[0]) { /* a class method: Class.method (DevTools' stack traces) */
		size_t n = strlen(cls);

		if (n + 1 + strlen(text) < sizeof(cls) + cap) {
			e->name = malloc(n + 1 + strlen(text) + 1);
			if (e->name)
				sprintf(e->name, "%s.%s", cls, text);
		}
	}
	if (!e->name) {
		e->name = strdup(text[0] ? text : "<anonymous>");
		if (!text[0]) /* named where it starts once its script's lines are known */
			e->start = sf.start;
	}
	if (!e->name)
		return -ENOMEM;
	read_spt(pid, f, sfi, e);
	e->cookie = cookie;
	return 0;
}

/* The 1-based line of script offset off in s, and its 1-based column into *column (0 with
 * the line when off is past the script's line ends).
 */
static int script_line(const struct script_entry *s, uint32_t off, int *column)
{
	int col = 0, line = v8_lines__line(s->line_ends, s->lines, off, &col);

	*column = line ? col + 1 : 0;
	return line;
}

/* An anonymous function named where it starts, "<anonymous>:LINE:COLUMN" (1-based, as
 * DevTools places it), once its script's line ends are known.
 */
static void anonymous_name(struct sfi_entry *e, const struct script_entry *s)
{
	char buf[64];
	int line, col = 0;
	char *dup;

	if (e->start < 0 || !s || !s->line_ends ||
	    !(line = v8_lines__line(s->line_ends, s->lines, (uint32_t)e->start, &col)))
		return;
	snprintf(buf, sizeof(buf), "<anonymous>:%d:%d", line, col + 1);
	if (!(dup = strdup(buf)))
		return;
	free(e->name);
	e->name = dup;
	e->start = -1;
}

/* The cached function, read if needed; NULL with a marker in *out. */
static struct sfi_entry *sfi_get(struct v8 *v, struct v8_proc *p, pid_t reader, uint64_t sfi,
				 uint32_t cookie, struct interp_symbol *out)
{
	struct sfi_entry *e = &v->sfis[cache_slot(&v->sfi_slots, p, sfi)], fresh = { 0 };
	uint64_t start;
	int err;

	if (e->pid == p->base.pid && e->gen == p->base.gen && e->sfi == sfi &&
	    e->cookie == cookie) {
		/* V8 collects a function's source positions lazily: read them again now and
		 * then while it has none
		 */
		if (!e->spt && e->script && ++e->spt_misses % V8_RETRY_EVERY == 0) {
			read_spt(reader, p->file, sfi, e);
			if (!budget_take(v, 0, e->spt_len)) {
				free(e->spt);
				e->spt = NULL;
				e->spt_len = 0;
			}
		}
		return e;
	}
	if (!symbol_cache__budget_begin(&p->base, &start)) {
		v->stats[V8_STAT_READS_OVER_BUDGET]++;
		interp__marker(out, SYMBOL_CACHE_OVER_BUDGET);
		return NULL;
	}
	v->stats[V8_STAT_FUNCTION_READS]++;
	err = read_sfi(reader, p->file, sfi, cookie, v->text, sizeof(v->text), &fresh);
	if (err == -EFAULT && reader != p->base.pid)
		err = read_sfi(p->base.pid, p->file, sfi, cookie, v->text, sizeof(v->text), &fresh);
	symbol_cache__budget_end(&p->base, start);
	if (err) {
		sfi_entry__clear(&fresh);
		v->stats[err == -ESTALE ? V8_STAT_STALE : V8_STAT_UNREADABLE]++;
		interp__marker(out, err == -ESTALE ? "stale" : "function unreadable");
		return NULL;
	}
	if (!budget_take(v, sfi_entry__bytes(e), fresh.spt_len)) {
		free(fresh.spt);
		fresh.spt = NULL;
		fresh.spt_len = 0;
	}
	sfi_entry__clear(e);
	*e = fresh;
	e->pid = p->base.pid;
	e->gen = p->base.gen;
	e->sfi = sfi;
	return e;
}

/* A Code's kind from its flags, as the walk compares it (bpf_abi.h: kind_xor). */
static uint8_t code_kind(const struct v8_file *f, uint32_t flags)
{
	return (uint8_t)((flags & f->bpf.kind_mask) ^ f->bpf.kind_xor);
}

/* The instruction start, flags and instruction size of the Code at tagged code (V8 10: its
 * instructions follow its header); 0, or -EFAULT.
 */
static int code_head(pid_t pid, const struct v8_file *f, uint64_t code, uint64_t *start,
		     uint32_t *flags, int32_t *size)
{
	uint64_t head[4];

	if (interp__read_mem(pid, code - 1 + f->bpf.code_start, head, sizeof(head)))
		return -EFAULT;
	memcpy(flags, (uint8_t *)head + f->bpf.code_flags, sizeof(*flags));
	memcpy(size, (uint8_t *)head + f->bpf.code_size, sizeof(*size));
	*start = f->bpf.code_inline ? code - 1 + f->bpf.code_inline : head[0];
	return 0;
}

/* The cookie of optimised code starting at start, size bytes long (bpf_abi.h). */
static uint32_t code_cookie(const struct v8_file *f, uint64_t start, int32_t size)
{
	return (uint32_t)(f->bpf.code_inline ? start ^ (uint64_t)(uint32_t)size << 16 : start);
}

/* Read an optimised code object (its Code at tagged code must still start its instructions
 * where eBPF saw them: the cookie); 0, -EFAULT unreadable, -ESTALE moved or another code.
 */
static int read_code(pid_t pid, const struct v8_file *f, uint64_t code, uint32_t cookie,
		     struct code_entry *e)
{
	const struct v8_layout *l = &f->l;
	uint64_t start, deopt, data, words[11], lits, lit_len;
	uint16_t type;
	uint32_t flags, kind;
	size_t n, i;

	if (v8_heap__type(pid, l, code, &type) || code_head(pid, f, code, &start, &flags, &e->size))
		return -EFAULT;
	kind = code_kind(f, flags);
	if (type != f->type_code || code_cookie(f, start, e->size) != cookie ||
	    kind < f->bpf.kind_opt_lo || kind > f->bpf.kind_opt_hi || e->size <= 0)
		return -ESTALE;
	e->kind = (uint8_t)kind;
	/* DeoptimizationData: the function, the inlined ones, their call positions. */
	if (interp__read_u64(pid, code - 1 + f->code_deopt, &deopt) ||
	    v8_heap__array(pid, l, deopt, f->type_deopt ? f->type_deopt : l->type_fixed_array,
			   &data, &n) ||
	    n < 11 || interp__read_mem(pid, data, words, sizeof(words)))
		return -EFAULT;
	/* V8 13.6: the function behind a SharedFunctionInfoWrapper (trusted space) */
	if (f->type_sfi_wrapper &&
	    (v8_heap__type(pid, l, words[f->dd_sfi], &type) || type != f->type_sfi_wrapper ||
	     interp__read_u64(pid, words[f->dd_sfi] - 1 + f->sfiw_shared, &words[f->dd_sfi])))
		return -EFAULT;
	if (v8_heap__type(pid, l, words[f->dd_sfi], &type) || type != l->type_sfi)
		return -EFAULT;
	e->sfi = words[f->dd_sfi];
	n = (size_t)(words[f->dd_inlined_cnt] >> 32);
	lits = words[f->dd_literals];
	if (words[f->dd_inlined_cnt] & 1 || n > INTERP_INLINED_MAX * 8)
		return -EFAULT;
	if (n) { /* a WeakFixedArray: FixedArray's header; the references may be weak */
		if ((lits & 3) != 1 ||
		    interp__read_u64(pid, lits - 1 + l->array_length, &lit_len) || (lit_len & 1) ||
		    (lit_len >> 32) < n || !(e->functions = calloc(n, sizeof(uint64_t))) ||
		    interp__read_mem(pid, lits - 1 + l->fixed_data, e->functions, n * 8))
			return -EFAULT;
		for (i = 0; i < n; i++)
			e->functions[i] &= ~(uint64_t)2;
		e->n_functions = n;
		if (read_bytes(pid, l, words[f->dd_inlining],
			       f->type_inlining ? f->type_inlining : l->type_byte_array,
			       V8_INLINING_MAX * V8_INLINING_POSITION_SIZE, &e->inlining,
			       &e->inlining_len) ||
		    e->inlining_len % V8_INLINING_POSITION_SIZE)
			return -EFAULT;
	}
	/* Recorded only while a profiler or debugger asks V8 for positions: may be empty. */
	if (!interp__read_u64(pid, code - 1 + f->code_spt, &data) && !spt_unwrap(pid, l, &data))
		read_bytes(pid, l, data, l->type_byte_array, V8_SPT_MAX, &e->spt, &e->spt_len);
	e->cookie = cookie;
	return 0;
}

/* The cached optimised code, read if needed (through the process itself when the reader
 * cannot); NULL with a marker in *out.
 */
static struct code_entry *code_get(struct v8 *v, struct v8_proc *p, pid_t reader, uint64_t code,
				   uint32_t cookie, struct interp_symbol *out)
{
	struct code_entry *e = &v->codes[cache_slot(&v->code_slots, p, code)], fresh = { 0 };
	pid_t readers[2] = { reader, p->base.pid };
	int err = -EFAULT, i;
	uint64_t start;

	if (e->pid == p->base.pid && e->gen == p->base.gen && e->code == code &&
	    e->cookie == cookie)
		return e;
	if (!symbol_cache__budget_begin(&p->base, &start)) {
		v->stats[V8_STAT_READS_OVER_BUDGET]++;
		interp__marker(out, SYMBOL_CACHE_OVER_BUDGET);
		return NULL;
	}
	v->stats[V8_STAT_CODE_READS]++;
	for (i = 0; i < (reader != p->base.pid ? 2 : 1) && err == -EFAULT; i++) {
		code_entry__clear(&fresh);
		err = read_code(readers[i], p->file, code, cookie, &fresh);
	}
	symbol_cache__budget_end(&p->base, start);
	if (err || !budget_take(v, code_entry__bytes(e), code_entry__bytes(&fresh))) {
		code_entry__clear(&fresh);
		v->stats[err == -ESTALE ? V8_STAT_STALE : V8_STAT_UNREADABLE]++;
		interp__marker(out, err == -ESTALE ? "stale" : "code unreadable");
		return NULL;
	}
	code_entry__clear(e);
	*e = fresh;
	e->pid = p->base.pid;
	e->gen = p->base.gen;
	e->code = code;
	if (e->kind == p->file->bpf.kind_opt_lo && !v7(p->file)) /* 7.8: TurboFan alone */
		v->stats[V8_STAT_MAGLEV_READS]++;
	return e;
}

/* s appended to v->inlined_text (at *used, NUL-terminated); NULL when s is NULL or does not
 * fit.
 */
static const char *inlined_copy(struct v8 *v, size_t *used, const char *s)
{
	size_t room = sizeof(v->inlined_text) - *used;
	char *at = v->inlined_text + *used;
	int n;

	if (!s || !room || (n = snprintf(at, room, "%s", s)) < 0 || (size_t)n >= room)
		return NULL;
	*used += (size_t)n + 1;
	return at;
}

/* One function of an optimised frame at script offset off (-1: none): its name, file and
 * line into *in (copied); false when the function cannot be read.
 */
static bool inlined_function(struct v8 *v, struct v8_proc *p, pid_t reader, uint64_t sfi,
			     int64_t off, size_t *used, struct interp_inlined *in)
{
	const struct v8_layout *l = &p->file->l;
	struct interp_symbol ignored;
	struct script_entry *s = NULL;
	struct sfi_entry *e;
	uint64_t name, script;
	uint32_t cookie;

	if (sfi_cookie(reader, l, sfi, &name, &script, &cookie)) {
		/* unreadable (the process has exited since): the function as read before */
		e = &v->sfis[cache_slot(&v->sfi_slots, p, sfi)];
		if (e->pid != p->base.pid || e->gen != p->base.gen || e->sfi != sfi || !e->name)
			return false;
	} else if (!(e = sfi_get(v, p, reader, sfi, cookie, &ignored))) {
		return false;
	}
	if (e->script)
		s = script_get(v, p, reader, e->script);
	anonymous_name(e, s);
	in->function = inlined_copy(v, used, e->name);
	in->file = s ? inlined_copy(v, used, s->name) : NULL;
	in->line = 0;
	in->column = 0;
	if (s && s->line_ends && off >= 0)
		in->line = script_line(s, (uint32_t)off, &in->column);
	return in->function != NULL;
}

/* An optimised frame: the code's function and the functions inlined at the pc offset, each
 * at its line when the code recorded source positions.
 */
static void optimized_symbolize(struct v8 *v, struct v8_proc *p, pid_t reader, uint64_t code,
				uint32_t pc_off, uint32_t cookie, struct interp_symbol *out)
{
	struct v8_inlined_pos stack[INTERP_INLINED_MAX + 1];
	struct interp_inlined outer;
	struct code_entry *e = code_get(v, p, reader, code, cookie, out);
	size_t n = 0, used = 0, i, first;
	int64_t raw = -1;

	if (!e)
		return;
	if (pc_off < (uint32_t)e->size &&
	    spt_ready(v, &e->spt, &e->spt_len, &e->marks, &e->marks_cnt))
		raw = v8_lines__position_marked(e->spt, e->spt_len, e->marks, e->marks_cnt, pc_off);
	if (raw >= 0)
		n = v8_lines__inlining_stack(raw, e->inlining, e->inlining_len, e->n_functions,
					     stack, INTERP_INLINED_MAX + 1);
	if (!n) {
		v->stats[V8_STAT_NO_POSITIONS]++;
		stack[0] = (struct v8_inlined_pos){ .function = -1, .script_offset = -1 };
		n = 1;
	}
	/* The code's own function (the last), then inward; an unreadable one drops it and
	 * every function it inlined (missing, never misplaced).
	 */
	if (!inlined_function(v, p, reader, e->sfi, stack[n - 1].script_offset, &used, &outer)) {
		interp__marker(out, "function unreadable");
		return;
	}
	first = n - 1;
	for (i = n - 1; i-- > 0;) {
		if (!inlined_function(v, p, reader, e->functions[stack[i].function],
				      stack[i].script_offset, &used, &v->inlined[i]))
			break;
		first = i;
	}
	*out = (struct interp_symbol){ .function = outer.function,
				       .file = outer.file,
				       .line = outer.line,
				       .column = outer.column };
	if (first < n - 1) {
		out->inlined = &v->inlined[first];
		out->inlined_cnt = (uint32_t)(n - 1 - first);
		v->stats[V8_STAT_INLINED] += out->inlined_cnt;
	}
	if (!outer.line)
		v->stats[V8_STAT_NO_LINE]++;
}

/* The pc of a V8_SUB_JIT frame from its low 28 bits: the nth address (0, 1...) in a code
 * range of the process with those bits (V8 11's code range is 128 MiB: one; V8 13.6's
 * reservation is 512 MiB, widened: up to 3), the one where code was last found (high)
 * first; 0 when there is no nth.
 */
static uint64_t jit_pc_in(const struct interp_code_range *r, uint32_t low, uint64_t high, int nth)
{
	uint64_t span = (uint64_t)V8_POS_NONE + 1, base, pc;
	int i, k, n = 0;

	if (high) {
		pc = high + low;
		for (i = 0; i < INTERP_CODE_RANGES; i++)
			if (r[i].end && pc >= r[i].start && pc < r[i].end) {
				if (!nth)
					return pc;
				n = 1;
				break;
			}
	}
	for (i = 0; i < INTERP_CODE_RANGES; i++) {
		if (!r[i].end)
			continue;
		base = r[i].start & ~(uint64_t)V8_POS_NONE;
		for (k = 0; base + (uint64_t)k * span < r[i].end && k < 4; k++) {
			pc = base + (uint64_t)k * span + low;
			if (pc < r[i].start || pc >= r[i].end || (high && pc == high + low))
				continue;
			if (n++ == nth)
				return pc;
		}
	}
	return 0;
}

/* ... from the ranges eBPF was given, else (a frame walked before they were known) from the
 * process's maps read now, at most V8_JIT_MAPS_READS times per process.
 */
static uint64_t jit_pc(struct v8_proc *p, uint32_t low, int nth)
{
	uint64_t pc = jit_pc_in(p->code, low, p->jit_high, nth);

	if (!pc) {
		pc = jit_pc_in(p->jit_ranges, low, p->jit_high, nth);
		if (!pc && !nth && p->jit_maps_reads < V8_JIT_MAPS_READS) {
			p->jit_maps_reads++;
			if (!code_ranges(p->base.pid, p->jit_ranges))
				pc = jit_pc_in(p->jit_ranges, low, p->jit_high, nth);
		}
	}
	return pc;
}

/* The Code at tagged code when its instructions start at start and hold pc: its kind and
 * size into *jc; false otherwise.
 */
static bool code_holds(pid_t pid, const struct v8_file *f, uint64_t code, uint64_t start,
		       uint64_t pc, struct jit_code *jc)
{
	uint64_t at;
	uint32_t flags;
	int32_t size;
	uint16_t type;

	if ((code & 3) != 1 || code_head(pid, f, code, &at, &flags, &size) || at != start)
		return false;
	if (size <= 0 || pc - start >= (uint64_t)size || v8_heap__type(pid, &f->l, code, &type) ||
	    type != f->type_code)
		return false;
	*jc = (struct jit_code){
		.start = start, .code = code, .size = size, .kind = code_kind(f, flags)
	};
	return true;
}

/* The code object whose instructions hold pc (V8 code in no function's current Code: OSR
 * code, code replaced while on the stack): instructions start 32-byte aligned right after
 * their InstructionStream's header (its map, its Code; V8 10: the Code's own header), so the
 * scan goes back from pc over the aligned addresses, up to V8_JIT_SCAN bytes, for a header
 * whose map is the InstructionStream (V8 10: Code) map and whose Code starts its
 * instructions there and holds pc. Found
 * codes are kept per process. NULL when none.
 */
static const struct jit_code *jit_code_at(struct v8_proc *p, pid_t pid, uint64_t pc)
{
	const struct v8_file *f = p->file;
	uint64_t buf[V8_JIT_CHUNK / 8], top = pc & ~(uint64_t)31, hi, lo, at, back;
	struct jit_code found;
	uint16_t type;
	size_t i;

	for (i = 0; i < V8_JIT_CODES; i++) {
		struct jit_code *j = &p->jit[i];

		if (j->size <= 0 || pc < j->start || pc - j->start >= (uint64_t)j->size)
			continue;
		/* still that code (code space is reused once a code object is collected), or a
		 * process that has exited since (its samples read late)
		 */
		if ((code_holds(pid, f, j->code, j->start, pc, &found) && found.kind == j->kind) ||
		    interp__read_mem(pid, j->code - 1, &found.code, sizeof(found.code)))
			return j;
		j->size = 0;
	}
	if (!f->istream_type || !f->bpf.code_ok)
		return NULL;
	/* buf holds [lo, hi): the words at start - back (the header's map) and, V8 11, at
	 * start - 8 (its Code; V8 10: the header is the Code) of each candidate start in
	 * [lo + back, hi], from pc & ~31 down; the next chunk goes on from the first start not
	 * looked at.
	 */
	back = f->istream_back;
	for (hi = top; hi > V8_JIT_CHUNK && top - hi < V8_JIT_SCAN; hi = at) {
		uint64_t base = hi - sizeof(buf);
		bool last = false;

		lo = base;
		/* The code space's first pages may be below a chunk: then its last page alone. */
		if (interp__read_mem(pid, lo, buf, sizeof(buf))) {
			lo = (hi - 1) & ~(uint64_t)4095;
			if (lo + back > hi ||
			    interp__read_mem(pid, lo, buf + (lo - base) / 8, hi - lo))
				return NULL;
			last = true;
		}
		for (at = hi; at >= lo + back; at -= 32) {
			uint64_t map = buf[(at - back - base) / 8],
				 code = f->istream_code
						? buf[(at - back + f->istream_code - base) / 8]
						: at - back + 1;

			if ((map & 3) != 1 || (code & 3) != 1)
				continue;
			if (p->istream_map ? map != p->istream_map
					   : (interp__read_mem(pid, map - 1 + f->l.map_type, &type,
							       sizeof(type)) ||
					      type != f->istream_type))
				continue;
			if (!code_holds(pid, f, code, at, pc, &found))
				continue;
			p->istream_map = map;
			p->jit[p->jit_next++ % V8_JIT_CODES] = found;
			return &p->jit[(p->jit_next - 1) % V8_JIT_CODES];
		}
		if (last)
			break;
	}
	return NULL;
}

/* A JIT frame by pc (V8_SUB_JIT): optimised code of the frame's function through its
 * deoptimisation data (inlined functions, lines), baseline code through its bytecode-offset
 * table; the function alone otherwise. false: not found (*out untouched).
 */
static bool jit_symbolize(struct v8 *v, struct v8_proc *p, pid_t reader, uint64_t sfi, uint32_t low,
			  bool is_return, struct sfi_entry *e, struct interp_symbol *out)
{
	const struct v8_file *f = p->file;
	const struct jit_code *jc;
	struct code_entry *ce;
	struct interp_symbol mark;
	uint64_t pc;
	int nth;

	for (nth = 0, jc = NULL; nth < V8_JIT_CANDIDATES && !jc; nth++)
		if ((pc = jit_pc(p, low, nth)))
			jc = jit_code_at(p, reader, pc);
		else
			break;
	if (!jc)
		return false;
	p->jit_high = pc & ~(uint64_t)V8_POS_NONE;
	if (f->bpf.kind_opt_lo && jc->kind >= f->bpf.kind_opt_lo &&
	    jc->kind <= f->bpf.kind_opt_hi) {
		ce = code_get(v, p, reader, jc->code, code_cookie(f, jc->start, jc->size), &mark);
		if (!ce || ce->sfi != sfi)
			return false;
		optimized_symbolize(v, p, reader, jc->code, (uint32_t)(pc - jc->start),
				    code_cookie(f, jc->start, jc->size), out);
		v->stats[V8_STAT_JIT_FOUND]++;
		return !out->marker;
	}
	if (jc->kind == f->bpf.kind_baseline) {
		int64_t bco =
			baseline_offset_of(v, p, reader, e, jc->code, pc - jc->start, is_return);
		struct script_entry *s = e->script ? script_get(v, p, reader, e->script) : NULL;
		int64_t off = bco >= 0 && s && s->line_ends && e->spt
				      ? sfi_script_offset(v, e, (uint32_t)bco)
				      : -1;

		if (off < 0)
			return false;
		anonymous_name(e, s);
		*out = (struct interp_symbol){ .function = e->name, .file = s->name };
		out->line = script_line(s, (uint32_t)off, &out->column);
		v->stats[V8_STAT_JIT_FOUND]++;
		return true;
	}
	return false;
}

/* A frame of JIT code with a frame-type marker (eBPF gives the marker: StackFrame::Type << 1)
 * and no JS function: compiled regular expressions, stubs; shown by its frame type.
 */
static void stub_frame(struct v8 *v, const struct v8_proc *p, uint32_t frame_marker,
		       struct interp_symbol *out)
{
	uint32_t type = frame_marker >> 1;
	const char *shown = p && !(frame_marker & 1) && type < V8_FRAME_TYPE_MAX
				    ? p->file->frame_shown[type]
				    : NULL;

	if (!shown)
		return interp__marker(out, "stub");
	*out = (struct interp_symbol){ .function = shown };
}

static void v8_symbolize(void *rt, void *proc_state, pid_t reader, const struct user_frame *uf,
			 struct interp_symbol *out)
{
	struct v8 *v = rt;
	struct v8_proc *p = proc_state;
	uint32_t sub = (uint32_t)(uf->file_id >> 60), cookie = (uint32_t)uf->file_id;
	uint32_t pos = (uint32_t)(uf->file_id >> 32) & V8_POS_NONE;
	struct script_entry *s = NULL;
	struct sfi_entry *e;
	int64_t off, bco;

	if (!uf->addr && (uf->file_id & 0xff) == V8_MARKER_STUB)
		return stub_frame(v, p, (uint32_t)(uf->file_id >> 8), out);
	if (!uf->addr)
		return interp__code_marker(out, INTERP_MARKERS(marker_texts), uf->file_id & 0xff);
	if (!p || !p->file->bpf.supported)
		return interp__marker(out, "unknown process");
	if (sub == V8_SUB_OPTIMIZED && p->file->bpf.kind_opt_lo)
		return optimized_symbolize(v, p, reader, uf->addr, pos, cookie, out);
	if (sub != V8_SUB_INTERPRETED && sub != V8_SUB_COMPILED && sub != V8_SUB_BASELINE &&
	    sub != V8_SUB_JIT)
		return interp__marker(out, "?");
	e = sfi_get(v, p, reader, uf->addr, cookie, out);
	if (!e)
		return;
	if (sub == V8_SUB_JIT) {
		if (jit_symbolize(v, p, reader, uf->addr, pos, uf->flags & USER_FRAME_RETURN, e,
				  out))
			return;
		v->stats[V8_STAT_JIT_NOT_FOUND]++;
		sub = V8_SUB_COMPILED; /* the function alone */
	}
	if (e->script)
		s = script_get(v, p, reader, e->script);
	anonymous_name(e, s);
	*out = (struct interp_symbol){ .function = e->name, .file = s ? s->name : NULL };
	if (sub == V8_SUB_COMPILED || !s)
		return; /* optimised code and builtins: no line yet */
	bco = pos == V8_POS_NONE ? -1 : (int64_t)pos;
	if (sub == V8_SUB_BASELINE && bco >= 0)
		bco = baseline_offset(v, p, reader, e, pos, uf->flags & USER_FRAME_RETURN);
	off = bco >= 0 && s->line_ends && e->spt ? sfi_script_offset(v, e, (uint32_t)bco) : -1;
	if (off < 0) {
		v->stats[V8_STAT_NO_LINE]++;
		return;
	}
	out->line = script_line(s, (uint32_t)off, &out->column);
}

const struct interp_runtime v8_runtime = {
	.name = "v8",
	.frame_type = "v8js",
	.frame_kind = FRAME_KIND_V8,
	INTERP_RUNTIME_COUNTERS(V8_COUNTERS, V8_COUNTER_CNT, V8_STATS, struct v8),
	.init = v8_init,
	.fini = v8_fini,
	.file_state_sz = sizeof(struct v8_file),
	.file_detect = v8_file_detect,
	.file_free = v8_file_free,
	.code_name = v8_code_name,
	.proc_state_sz = sizeof(struct v8_proc),
	.proc_attach = v8_proc_attach,
	.proc_refresh = v8_proc_refresh,
	.symbolize = v8_symbolize,
};
