#!/bin/bash
# Kernel frames: a syscall-heavy workload (write to /dev/null, read from /dev/zero) must show
# the kernel's entry path on the leaf side of the user frames, in one stack:
#   wl_kernel;_start;...;main;syscall_loop;read;entry_SYSCALL_64_after_hwframe;do_syscall_64;...
source "$(dirname "$0")/lib.sh"
need_root
have_fixture wl_kernel || finish

f=$TMP/k.folded
record "$TMP/k.err" -F 499 -q -o "$f" -- "$FIX/wl_kernel" 2
check_eq "stackscope exit status" $? 0
total=$(samples "$f" wl_kernel)
check_ge "samples of wl_kernel" "$total" 100

ENTRY='entry_SYSCALL_64[^;]*;do_syscall_64'
# at most one libc frame (the read/write wrapper) between syscall_loop and the kernel entry
in_kernel=$(samples "$f" wl_kernel ";main;syscall_loop;([^;]+;)?$ENTRY(;|\$)")
full=$(samples "$f" wl_kernel "^wl_kernel;${START_RE}main;syscall_loop;([^;]+;)?$ENTRY(;|\$)")
vfs=$(samples "$f" wl_kernel ";main;syscall_loop;([^;]+;)?$ENTRY;.*(ksys|vfs)_(read|write)(;|\$)")
check_pct "samples with the syscall entry on the leaf side of main;syscall_loop" \
	"$in_kernel" "$total" 60 || show "$f" wl_kernel
check_pct "of those, user frames complete back to _start" "$full" "$in_kernel" 90
check_pct "samples reaching ksys_/vfs_read/write below the entry" "$vfs" "$total" 50
# kernel frames are never on the root side of user frames
wrong=$(samples "$f" wl_kernel "(entry_SYSCALL_64|do_syscall_64).*;(main|syscall_loop)(;|\$)")
check_eq "samples with kernel frames root-side of main/syscall_loop" "$wrong" 0
unsym=$(samples "$f" wl_kernel ';(0x[0-9a-f]+|\[unknown\]|vmlinux\+0x[0-9a-f]+)(;|$)')
check_pct "samples without unsymbolized frames" $((total - unsym)) "$total" 95

finish
