#!/bin/bash
# timeout: 240
# Kubernetes metadata without an API call (src/proc/k8s_pod.c) and the manifests of
# dist/kubernetes/:
#  1. a fake node: the kubelet's pod log folders (/var/log/pods/<ns>_<pod>_<uid>/<container>/),
#     its pod folders (/var/lib/kubelet/pods/<uid>/containers/) and the runtimes' OCI specs
#     (containerd, CRI-O) under a folder given to the agent as --host-root, and real cgroup v2
#     folders named as the kubelet names them with both drivers (systemd: kubepods.slice/
#     kubepods-burstable.slice/kubepods-burstable-pod<u_i_d>.slice/cri-containerd-<id>.scope,
#     CRI-O's crio-<id>.scope; cgroupfs: kubepods/pod<uid>/<id>, kubepods/burstable/...), with
#     a burner (wl_chain_nofp) placed in each before it execs. The agent exports to
#     otlp_receiver.py; each request, decoded by protoc with the upstream protos (no unknown
#     field), gives each burner's samples a resource with its container.id, k8s.pod.uid,
#     k8s.pod.name, k8s.namespace.name, k8s.container.name and k8s.node.name (NODE_NAME);
#     a burner outside the pods gets k8s.node.name alone.
#  2. selection by namespace and pod on the same node (--select-pod / --exclude-pod, globs):
#     fresh burners in the same cgroups, one agent run per rule set (one of them from a
#     config file, one with a name rule beside it): exactly the pods chosen have samples in
#     the requests, the outsider is kept by an exclude list; the rejected pods' samples are
#     dropped in eBPF ("not selected" in the agent's summary); under pod rules alone few
#     samples (a tenth at most: other processes' new cgroups) are walked before a verdict.
#  3. dist/kubernetes/*.yaml decode strictly into the Kubernetes API types (scripts/
#     k8s_validator.sh: k8s.io/api with unknown fields an error) and a misspelled field is
#     refused; the agent's config file in the ConfigMap passes `stackscope agent
#     --check-config`, and a misspelled key in it does not.
# The cgroups and the files are removed at the end.
source "$(dirname "$0")/lib.sh"
need_root

PY=/usr/bin/python3
RECEIVER=$SS_ROOT/tests/system/otlp_receiver.py
PROTO=$SS_ROOT/proto
NODE=$TMP/node
NODE_NAME_WANT=node-k8s34-$RANDOM
CG_MADE=() # cgroup folders this test made, in creation order
PODS_CG=() # the four pods' container cgroups, made by section_attrs

# the cgroup v2 hierarchy: /sys/fs/cgroup (unified) or /sys/fs/cgroup/unified (hybrid)
CG=
for d in /sys/fs/cgroup /sys/fs/cgroup/unified; do
	if [[ $(stat -fc %T "$d" 2>/dev/null) == cgroup2fs ]]; then
		CG=$d
		break
	fi
done

remove_cgroups()
{
	local i
	for ((i = ${#CG_MADE[@]} - 1; i >= 0; i--)); do
		rmdir "${CG_MADE[i]}" 2>/dev/null # a parent another test uses stays
	done
}
trap 'remove_cgroups; cleanup' EXIT

# mkcg REL: makes $CG/REL and its missing parents (each remembered for removal)
mkcg()
{
	local path=$CG p=
	local IFS=/
	for p in $1; do
		path=$path/$p
		if [[ ! -d $path ]]; then
			mkdir "$path" || return 1
			CG_MADE+=("$path")
		fi
	done
}

put() { mkdir -p "$(dirname "$NODE/$1")" && printf '%s' "${2:-}" >"$NODE/$1"; }
new_uid() { cat /proc/sys/kernel/random/uuid; }
new_id() { head -c 32 /dev/urandom | sha256sum | cut -c1-64; }

# burner NAME CGROUP-REL: wl_chain_nofp in $CG/CGROUP-REL from its first instruction
burner()
{
	local var=$1
	spawn "$var" sh -c 'echo $$ >"$1/cgroup.procs" && exec "$2" 40' sh "$CG/$2" \
		"$FIX/wl_chain_nofp"
}

# =========================== 1. attributes from a fake node ===========================
section_attrs()
{
	local u1 u2 u3 u4 c1 c2 c3 c4 c1b c2b cg1 cg2 cg3 cg4 pid

	if [[ -z $CG ]]; then
		skip "no cgroup v2 hierarchy (/sys/fs/cgroup or /sys/fs/cgroup/unified)"
		return
	fi
	have_fixture wl_chain_nofp || return
	if ! command -v protoc >/dev/null; then
		skip_setup "protoc missing (protobuf-compiler)"
		return
	fi
	u1=$(new_uid) u2=$(new_uid) u3=$(new_uid) u4=$(new_uid)
	c1=$(new_id) c2=$(new_id) c3=$(new_id) c4=$(new_id) c1b=$(new_id) c2b=$(new_id)
	# pod 1: systemd driver, containerd, burstable; two containers, the spec names it
	put "var/log/pods/shop_web-7d4b9c-x2x7k_$u1/app/0.log"
	put "var/log/pods/shop_web-7d4b9c-x2x7k_$u1/sidecar/0.log"
	mkdir -p "$NODE/var/lib/kubelet/pods/$u1/containers/"{app,sidecar}
	put "run/containerd/io.containerd.runtime.v2.task/k8s.io/$c1/config.json" \
		"{\"ociVersion\":\"1.2.0\",\"annotations\":{\"io.kubernetes.cri.container-type\":\"container\",\"io.kubernetes.cri.container-name\":\"app\",\"io.kubernetes.cri.sandbox-name\":\"web-7d4b9c-x2x7k\",\"io.kubernetes.cri.sandbox-namespace\":\"shop\",\"io.kubernetes.cri.sandbox-uid\":\"$u1\"}}"
	put "run/containerd/io.containerd.runtime.v2.task/k8s.io/$c1b/config.json" \
		"{\"annotations\":{\"io.kubernetes.cri.container-type\":\"container\",\"io.kubernetes.cri.container-name\":\"sidecar\",\"io.kubernetes.cri.sandbox-uid\":\"$u1\"}}"
	cg1=kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod${u1//-/_}.slice/cri-containerd-$c1.scope
	# pod 2: systemd driver, CRI-O, besteffort; two containers, CRI-O's spec names it
	put "var/log/pods/batch_job-1-abcde_$u2/worker/0.log"
	put "var/log/pods/batch_job-1-abcde_$u2/helper/0.log"
	put "run/containers/storage/overlay-containers/$c2/userdata/config.json" \
		"{\"annotations\": {\"io.kubernetes.container.name\": \"worker\", \"io.kubernetes.pod.name\": \"job-1-abcde\", \"io.kubernetes.pod.namespace\": \"batch\", \"io.kubernetes.pod.uid\": \"$u2\"}}"
	put "run/containers/storage/overlay-containers/$c2b/userdata/config.json" \
		"{\"annotations\": {\"io.kubernetes.container.name\": \"helper\", \"io.kubernetes.pod.uid\": \"$u2\"}}"
	cg2=kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod${u2//-/_}.slice/crio-$c2.scope
	# pod 3: cgroupfs driver, containerd without a spec to read, guaranteed; its one container
	put "var/log/pods/data_db-0_$u3/postgres/0.log"
	mkdir -p "$NODE/var/lib/kubelet/pods/$u3/containers/postgres"
	cg3=kubepods/pod$u3/$c3
	# pod 4: cgroupfs driver, docker (cri-dockerd), burstable: a log file links to the id
	put "var/log/pods/kube-system_kube-proxy-8xk2p_$u4/kube-proxy/0.log"
	ln -s "/var/lib/docker/containers/$c4/$c4-json.log" \
		"$NODE/var/log/pods/kube-system_kube-proxy-8xk2p_$u4/kube-proxy/1.log"
	put "var/log/pods/kube-system_kube-proxy-8xk2p_$u4/init-iptables/0.log"
	cg4=kubepods/burstable/pod$u4/$c4
	for c in "$cg1" "$cg2" "$cg3" "$cg4"; do
		if ! mkcg "$c"; then
			fail "cannot make the cgroup $CG/$c"
			return
		fi
	done
	ok "cgroup v2 folders as the kubelet names them (systemd and cgroupfs drivers) under $CG"
	PODS_CG=("$cg1" "$cg2" "$cg3" "$cg4")
	start_burners || return
	ok "burners placed: $B1 $B2 $B3 $B4 (and $B0 outside the pods)"

	agent_run attrs 6 || return
	check_eq "requests decoded with the upstream protos" \
		"$(awk '$1 == "decode_failed" { print $2 }' "$TMP/facts.txt")" 0 ||
		head -c 600 "$TMP/decode.err"
	check_ge "requests received" "$(awk '$1 == "requests" { print $2 }' "$TMP/facts.txt")" 3
	check_eq "unknown fields in the requests" \
		"$(awk '$1 == "unknown_fields" { print $2 }' "$TMP/facts.txt")" 0
	expect "$B1" "container.id=$c1 k8s.pod.uid=$u1 k8s.namespace.name=shop k8s.pod.name=web-7d4b9c-x2x7k k8s.container.name=app"
	expect "$B2" "container.id=$c2 k8s.pod.uid=$u2 k8s.namespace.name=batch k8s.pod.name=job-1-abcde k8s.container.name=worker"
	expect "$B3" "container.id=$c3 k8s.pod.uid=$u3 k8s.namespace.name=data k8s.pod.name=db-0 k8s.container.name=postgres"
	expect "$B4" "container.id=$c4 k8s.pod.uid=$u4 k8s.namespace.name=kube-system k8s.pod.name=kube-proxy-8xk2p k8s.container.name=kube-proxy"
	expect "$B0" "" "k8s.pod.uid k8s.pod.name k8s.namespace.name k8s.container.name container.id"
	stop_burners
}

# start_burners: B1..B4 in the four pods' cgroups (shop/web, batch/job, data/db-0,
# kube-system/kube-proxy), B0 outside the pods; 1 when one is not where it should be
start_burners()
{
	local pid
	burner B1 "${PODS_CG[0]}"
	burner B2 "${PODS_CG[1]}"
	burner B3 "${PODS_CG[2]}"
	burner B4 "${PODS_CG[3]}"
	spawn B0 "$FIX/wl_chain_nofp" 40
	sleep 0.3
	for pid in $B1 $B2 $B3 $B4; do
		if ! grep -q kubepods "/proc/$pid/cgroup" 2>/dev/null; then
			fail "burner $pid is not in its pod's cgroup: $(cat "/proc/$pid/cgroup" 2>&1 | tail -1)"
			return 1
		fi
	done
}

stop_burners()
{
	kill "$B0" "$B1" "$B2" "$B3" "$B4" 2>/dev/null
	wait "$B0" "$B1" "$B2" "$B3" "$B4" 2>/dev/null
}

# agent_run NAME SECS [ARGS...]: the agent on the fake node for SECS seconds with ARGS, into
# a receiver of its own ($TMP/NAME); its requests decoded into $TMP/facts.txt, its log in
# $TMP/NAME.err; 1 when it did not run
agent_run()
{
	local name=$1 secs=$2 port= i apid
	shift 2
	mkdir -p "$TMP/$name"
	$PY "$RECEIVER" --dir "$TMP/$name" --lifetime 120 >"$TMP/$name.port" 2>"$TMP/$name.rcv" &
	_bg_pids+=($!)
	for ((i = 0; i < 50; i++)); do
		port=$(head -1 "$TMP/$name.port" 2>/dev/null)
		[[ -n $port ]] && break
		sleep 0.1
	done
	if [[ -z $port ]]; then
		fail "$name: the receiver did not start: $(head -c 300 "$TMP/$name.rcv")"
		return 1
	fi
	NODE_NAME=$NODE_NAME_WANT "$SS" agent -F 99 --interval 1 --cache-dir "" \
		--otlp-endpoint "http://127.0.0.1:$port" --host-root "$NODE" "$@" \
		2>"$TMP/$name.err" &
	apid=$!
	_bg_pids+=($apid)
	if ! wait_agent "$TMP/$name.err" "$apid"; then
		fail "$name: the agent did not start: $(tail -3 "$TMP/$name.err")"
		return 1
	fi
	sleep "$secs"
	kill -TERM "$apid"
	wait "$apid"
	check_eq "$name: agent exit status" "$?" 0
	decode "$TMP/$name" >"$TMP/facts.txt" 2>"$TMP/decode.err"
}

# =========================== 2. selection by namespace / pod ===========================
section_select()
{
	if [[ ${#PODS_CG[@]} -ne 4 ]]; then
		skip "selection by pod: no fake node (section 1 did not make it)"
		return
	fi
	# a namespace alone: its every pod
	sel_case sel_ns "B1" "B2 B3 B4 B0" --select-pod shop || return
	# NAMESPACE/POD globs, two rules: either
	sel_case sel_pods "B3 B4" "B1 B2 B0" --select-pod 'data/db-?' \
		--select-pod '*/kube-proxy-*' || return
	# the exclude list from a config file, as the ConfigMap would carry it: the rest stays
	printf 'exclude-pod = batch\nexclude-pod = shop/web-*\n' >"$TMP/sel.conf"
	sel_case sel_excl "B3 B4 B0" "B1 B2" --config "$TMP/sel.conf" || return
	# beside a name rule (decided per process): an excluded pod still out, in eBPF
	sel_case sel_name "B1 B2 B3 B0" "B4" --select-name '^wl_chain' --exclude-pod kube-system
}

# sel_case NAME "KEPT..." "DROPPED..." ARGS...: fresh burners (B0..B4, named by variable), a
# 4 s agent run with ARGS, only_pids on it
sel_case()
{
	local name=$1 kept=$2 dropped=$3 v kp= dp=
	shift 3
	start_burners || return 1
	for v in $kept; do kp+="${!v} "; done
	for v in $dropped; do dp+="${!v} "; done
	if agent_run "$name" 4 "$@"; then
		only_pids "$name" "${kp% }" "${dp% }"
	fi
	stop_burners
	return 0
}

# pid_samples PID: the process's samples in $TMP/facts.txt ("" for none)
pid_samples() { awk -v p="$1" '$1 == "samples" && $2 == p { print $3 }' "$TMP/facts.txt"; }

# only_pids NAME "KEPT..." "DROPPED...": the run's requests have samples of the kept pids and
# none of the dropped; the dropped were not walked: the agent's summary counts their samples
# as not selected in eBPF, and samples walked before a verdict then dropped are few beside
# them
only_pids()
{
	local name=$1 kept=$2 dropped=$3 pid n line out after bad=
	for pid in $kept; do
		n=$(pid_samples "$pid")
		[[ ${n:-0} -ge 10 ]] || bad+=" $pid kept: ${n:-0} samples (want >= 10);"
	done
	for pid in $dropped; do
		n=$(pid_samples "$pid")
		[[ -z $n ]] || bad+=" $pid not selected: $n samples;"
	done
	if [[ -z $bad ]]; then
		ok "$name: samples of $kept only (not of $dropped)"
	else
		fail "$name:$bad"
	fi
	line=$(grep 'selection: ' "$TMP/$name.err" | tail -1)
	out=$(sed -n 's/.*selection: \([0-9]*\) samples not selected in eBPF.*/\1/p' <<<"$line")
	after=$(sed -n 's/.*not classified yet (\([0-9]*\) of them dropped after the walk).*/\1/p' \
		<<<"$line")
	echo "        $(sed -n 's/.*not selected in eBPF (\([0-9]*\) ns each, no walk; \([0-9]*\) ns per walked sample.*/rejected \1 ns, walked \2 ns per sample/p' <<<"$line")"
	# each dropped burner ran as long as a kept one (>= 10 samples); at load 6 a burner gets
	# ~10 % of a core (40 samples in 4 s), so ask 5 of each
	check_ge "$name: samples not selected, dropped in eBPF" "${out:-0}" \
		$((5 * $(wc -w <<<"$dropped"))) || echo "        $line"
	# under pod rules alone eBPF decides every process of a known cgroup (other processes on
	# a shared box, in new cgroups, may be walked before their verdict); beside a name rule a
	# process new since the agent's start is walked until classified, by design: not asked
	[[ $name == *_name ]] && return
	check "$name: samples walked then dropped (${after:-?}) at most a tenth of those" \
		test -n "$after" -a "$((${after:-0} * 10))" -le "${out:-0}" || echo "        $line"
}

# expect PID "KEY=VALUE..." ["KEY..." absent]: the process's resources in the requests carry
# those attributes (and k8s.node.name), on samples of its own
expect()
{
	local pid=$1 want=$2 absent=${3:-} kv got n bad=
	n=$(pid_samples "$pid")
	check_ge "pid $pid: samples in the requests" "${n:-0}" 10
	for kv in $want "k8s.node.name=$NODE_NAME_WANT"; do
		got=$(awk -v p="$pid" -v k="${kv%%=*}" '$1 == "attr" && $2 == p && $3 == k { print $4 }' \
			"$TMP/facts.txt" | sort -u | tr '\n' ' ')
		[[ $got == "${kv#*=} " ]] || bad+=" ${kv%%=*}='${got% }' (want '${kv#*=}')"
	done
	for kv in $absent; do
		got=$(awk -v p="$pid" -v k="$kv" '$1 == "attr" && $2 == p && $3 == k { print $4 }' \
			"$TMP/facts.txt" | sort -u | tr '\n' ' ')
		[[ -z $got ]] || bad+=" $kv='${got% }' (want none)"
	done
	if [[ -z $bad ]]; then
		ok "pid $pid: resource attributes ${want:-k8s.node.name only} in the requests"
	else
		fail "pid $pid:$bad"
	fi
}

# decode DIR: the receiver's accepted requests through protoc --decode (the upstream protos in
# proto/), as lines "requests N", "decode_failed N", "unknown_fields N", "samples PID N",
# "attr PID KEY VALUE" (each resource's, once per request)
decode()
{
	$PY - "$PROTO" "$1" <<-'PYEOF'
		import glob, json, os, re, subprocess, sys
		proto_dir, rcv = sys.argv[1], sys.argv[2]
		protos = sorted(glob.glob(os.path.join(proto_dir, "**", "*.proto"), recursive=True))
		MSG = "opentelemetry.proto.collector.profiles.v1development.ExportProfilesServiceRequest"
		OPEN = re.compile(r"^(\S+) \{$")
		n = {"requests": 0, "decode_failed": 0, "unknown_fields": 0}
		samples, attrs = {}, set()

		def tree(text):
		    stack = [{}]
		    for line in text.splitlines():
		        s = line.strip()
		        m = OPEN.match(s)
		        if m:
		            if m.group(1)[0].isdigit():
		                n["unknown_fields"] += 1
		            child = {}
		            stack[-1].setdefault(m.group(1), []).append(child)
		            stack.append(child)
		        elif s == "}":
		            stack.pop()
		        elif s:
		            k, _, v = s.partition(": ")
		            if k[0].isdigit():
		                n["unknown_fields"] += 1
		            stack[-1].setdefault(k, []).append(v.strip('"'))
		    return stack[0]

		for line in open(os.path.join(rcv, "requests.jsonl")):
		    e = json.loads(line)
		    if e.get("answer") != "ok":
		        continue
		    raw = open(os.path.join(rcv, e["file"]), "rb").read()
		    p = subprocess.run(["protoc", "--decode=" + MSG, "-I", proto_dir] + protos,
		                       input=raw, capture_output=True)
		    n["requests"] += 1
		    if p.returncode:
		        n["decode_failed"] += 1
		        sys.stderr.write(p.stderr.decode()[:300])
		        continue
		    req = tree(p.stdout.decode("utf-8", "replace"))
		    for rp in req.get("resource_profiles", []):
		        kv = {}
		        for res in rp.get("resource", []):
		            for a in res.get("attributes", []):
		                v = a.get("value", [{}])[0]
		                kv[a["key"][0]] = (v.get("string_value") or v.get("int_value") or [""])[0]
		        pid = kv.get("process.pid")
		        if not pid:
		            continue
		        for k, v in kv.items():
		            attrs.add((pid, k, v))
		        for sp in rp.get("scope_profiles", []):
		            for prof in sp.get("profiles", []):
		                for s in prof.get("samples", []):
		                    samples[pid] = samples.get(pid, 0) + max(
		                        1, len(s.get("timestamps_unix_nano", [])))
		for k, v in n.items():
		    print(k, v)
		for pid, c in samples.items():
		    print("samples", pid, c)
		for pid, k, v in sorted(attrs):
		    print("attr", pid, k, v)
	PYEOF
}

# =========================== 3. the manifests ===========================
section_manifests()
{
	local dist=$SS_ROOT/dist/kubernetes validator f conf
	validator=$("$SS_ROOT/scripts/k8s_validator.sh" 2>"$TMP/validator-build.err")
	if [[ ! -x $validator ]]; then
		skip_setup "no manifest validator: $(tail -3 "$TMP/validator-build.err")"
	else
		for f in "$dist"/*.yaml; do
			if "$validator" "$f" >"$TMP/validate.out" 2>&1; then
				ok "${f##*/}: $(tr '\n' ' ' <"$TMP/validate.out")"
			else
				fail "${f##*/}: $(head -c 400 "$TMP/validate.out")"
			fi
		done
		# a misspelled field, a wrong type, an unknown kind: refused
		sed 's/readOnlyRootFilesystem:/readOnlyRootFilesytem:/' "$dist/daemonset.yaml" \
			>"$TMP/typo.yaml"
		check "the daemonset with a misspelled field is refused" \
			not_accepted "$validator" "$TMP/typo.yaml"
		sed 's/hostPID: true/hostPID: "yes"/' "$dist/daemonset.yaml" >"$TMP/type.yaml"
		check "the daemonset with a string for a bool is refused" \
			not_accepted "$validator" "$TMP/type.yaml"
		sed 's/^kind: DaemonSet/kind: DaemonSett/' "$dist/daemonset.yaml" >"$TMP/kind.yaml"
		check "an unknown kind is refused" not_accepted "$validator" "$TMP/kind.yaml"
	fi
	# the agent's config file, as the ConfigMap carries it
	conf=$TMP/agent.conf
	if ! $PY - "$dist/configmap.yaml" "$conf" <<-'PYEOF'; then
		import sys
		# the block scalar of key agent.conf (a "|" block, indented)
		lines = open(sys.argv[1]).read().splitlines()
		out, ind = None, None
		for l in lines:
		    if out is None:
		        if l.strip().startswith("agent.conf: |"):
		            out = []
		        continue
		    if l.strip() and ind is None:
		        ind = len(l) - len(l.lstrip())
		    if l.strip() and len(l) - len(l.lstrip()) < ind:
		        break
		    out.append(l[ind:] if ind else l)
		if not out:
		    sys.exit("no agent.conf block")
		open(sys.argv[2], "w").write("\n".join(out) + "\n")
	PYEOF
		fail "configmap.yaml: no agent.conf"
		return
	fi
	mkdir -p "$TMP/hostroot"
	# the paths of the DaemonSet's mounts, here: the host root and the cache
	sed -i -e "s|^host-root = .*|host-root = $TMP/hostroot|" "$conf"
	if "$SS" agent --config "$conf" --check-config >"$TMP/check.out" 2>&1; then
		ok "the ConfigMap's agent.conf passes --check-config ($(grep -c '^[a-z]' "$conf") settings)"
	else
		fail "the ConfigMap's agent.conf: $(head -3 "$TMP/check.out")"
	fi
	echo "intervall = 5" >>"$conf"
	check "a misspelled key is refused by --check-config" \
		not_accepted "$SS" agent --config "$conf" --check-config
}

not_accepted() { ! "$@" >/dev/null 2>&1; }

section_attrs
section_select
section_manifests
finish
