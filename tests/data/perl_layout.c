/* Prints one Perl build's struct perl_layout (src/interp/perl/perl.c) as the table's C
 * initializer: offsetof() and the constants over the CORE headers the build was made from
 * (config.h says threaded or not; perl.h pulls in intrpvar.h, cop.h, sv.h, cv.h, gv.h, hv.h,
 * opnames.h). Not part of the build: compile it by hand against a version's headers, e.g. in a
 * Debian root with libperl5.xx (or libperl-dev) installed:
 *   CORE=ROOT/usr/lib/x86_64-linux-gnu/perl/5.40/CORE
 *   cc -O2 -D_REENTRANT -D_GNU_SOURCE -DDEBIAN -fwrapv -fno-strict-aliasing \
 *      -D_LARGEFILE_SOURCE -D_FILE_OFFSET_BITS=64 -I$CORE tests/data/perl_layout.c -o pl && ./pl
 * (the flags are what `perl -MExtUtils::Embed -e ccopts` gives there; -O2 drops the inline
 * functions that would need libperl). It also prints the
 * constants bpf/interp/perl/bpf_abi.h assumes, each with whether this version agrees.
 */
#include <stddef.h>
#include <stdio.h>

#include "EXTERN.h"
#include "perl.h"

#if !defined(USE_ITHREADS) || !defined(MULTIPLICITY)
#error "a non-threaded perl: the interpreter's variables are globals, not struct interpreter"
#endif

/* The last PERLSI_ of cop.h (5.42 added two): look again at a new version's. */
#if defined(PERLSI_CONSTRUCTOR)
#define SI_TYPE_MAX PERLSI_CONSTRUCTOR
#elif defined(PERLSI_SMARTMATCH)
#define SI_TYPE_MAX PERLSI_SMARTMATCH
#else
#define SI_TYPE_MAX PERLSI_REGCOMP
#endif

#define OFF(type, field) ((unsigned)offsetof(type, field))

static int same(const char *name, long have, long want)
{
	printf("\t/* %-20s %#6lx %s */\n", name, have, have == want ? "as bpf_abi.h" : "DIFFERS");
	return have == want;
}

int main(void)
{
	printf("/* Perl %d.%d.%d, threaded, sizeof(PERL_CONTEXT) %zu */\n", PERL_REVISION,
	       PERL_VERSION, PERL_SUBVERSION, sizeof(PERL_CONTEXT));
	printf("\t.major = %d,\n\t.minor = %d,\n", PERL_REVISION, PERL_VERSION);
	printf("\t.bpf = {\n");
	printf("\t\t.interp_curcop = %u,\n", OFF(struct interpreter, Icurcop));
	printf("\t\t.interp_curstackinfo = %u,\n", OFF(struct interpreter, Icurstackinfo));
	printf("\t\t.si_cxstack = %u,\n", OFF(PERL_SI, si_cxstack));
	printf("\t\t.si_prev = %u,\n", OFF(PERL_SI, si_prev));
	printf("\t\t.si_cxix = %u,\n", OFF(PERL_SI, si_cxix));
	printf("\t\t.si_cxmax = %u,\n", OFF(PERL_SI, si_cxmax));
	printf("\t\t.si_type = %u,\n", OFF(PERL_SI, si_type));
	printf("\t\t.cx_size = %zu,\n", sizeof(PERL_CONTEXT));
	printf("\t\t.cx_type = %u,\n", OFF(PERL_CONTEXT, cx_type));
	printf("\t\t.cx_u16 = %u,\n", OFF(PERL_CONTEXT, blk_u16));
	printf("\t\t.cx_oldcop = %u,\n", OFF(PERL_CONTEXT, blk_oldcop));
	printf("\t\t.cx_retop = %u, /* blk_eval.retop %u */\n", OFF(PERL_CONTEXT, blk_sub.retop),
	       OFF(PERL_CONTEXT, blk_eval.retop));
	printf("\t\t.cx_sub_cv = %u,\n", OFF(PERL_CONTEXT, blk_sub.cv));
	printf("\t\t.sv_flags = %u,\n", OFF(SV, sv_flags));
	printf("\t\t.xcv_gv = %u,\n", OFF(XPVCV, xcv_gv_u));
	printf("\t\t.xcv_flags = %u,\n", OFF(XPVCV, xcv_flags));
	printf("\t\t.cop_line = %u,\n", OFF(COP, cop_line));
	printf("\t\t.op_enter_eval = %d,\n", OP_ENTEREVAL);
	printf("\t\t.op_require = %d,\n", OP_REQUIRE);
	printf("\t\t.op_dofile = %d,\n", OP_DOFILE);
	printf("\t\t.si_type_max = %d,\n", SI_TYPE_MAX);
	printf("\t},\n");
	printf("\t.interp_defstash = %u,\n", OFF(struct interpreter, Idefstash));
	printf("\t.xcv_stash = %u,\n", OFF(XPVCV, xcv_stash));
	printf("\t.xpvgv_namehek = %u,\n", OFF(XPVGV, xiv_u.xivu_namehek));
	printf("\t.xpvgv_stash = %u,\n", OFF(XPVGV, xnv_u.xgv_stash));
#if PERL_VERSION >= 35 /* struct xpvhv_with_aux: HvAUX in the body */
	printf("\t.xpvhv_aux = %u,\n", OFF(struct xpvhv_with_aux, xhv_aux));
#else /* HvAUX after the bucket array: HvARRAY(hv)[HvMAX(hv) + 1] */
	printf("\t.aux_after_array = 1, /* sv_u %u, xhv_max %u */\n", OFF(SV, sv_u),
	       OFF(XPVHV, xhv_max));
#endif
	printf("\t.aux_name = %u,\n", OFF(struct xpvhv_aux, xhv_name_u));
	printf("\t.aux_name_count = %u,\n", OFF(struct xpvhv_aux, xhv_name_count));
	printf("\t.hek_len = %u,\n", OFF(HEK, hek_len));
	printf("\t.hek_key = %u,\n", OFF(HEK, hek_key));
	printf("\t.cop_file = %u,\n", OFF(COP, cop_file));
	/* bpf_abi.h's constants (the same in every version it knows) */
	same("CXTYPEMASK", CXTYPEMASK, 0xf);
	same("CXt_NULL", CXt_NULL, 0);
	same("CXp_SUB_RE_FAKE", CXp_SUB_RE_FAKE, 0x80);
	same("CXp_EVALBLOCK", CXp_TRYBLOCK, 0x40);
	same("PERLSI_MAIN", PERLSI_MAIN, 1);
	same("CXt_SUB", CXt_SUB, 9);
	same("CXt_FORMAT", CXt_FORMAT, 10);
	same("CXt_EVAL", CXt_EVAL, 11);
	same("SVt_PVGV", SVt_PVGV, 9);
	same("SVt_PVHV", SVt_PVHV, 12);
	same("SVt_PVCV", SVt_PVCV, 13);
	same("CVf_NAMED", CVf_NAMED, 0x8000);
	same("SVf_OOK", SVf_OOK, 0x02000000);
	same("sv_any", OFF(SV, sv_any), 0);
	same("sizeof(line_t)", sizeof(line_t), 4);
	same("sizeof(HEK.hek_len)", sizeof(((HEK *)0)->hek_len), 4);
	return 0;
}
