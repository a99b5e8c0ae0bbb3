# Sourced by check_sass.sh and cross_check_cccl.sh: where the CUDA binary tools are looked for.
# find_tool NAME OVERRIDE prints the first of: OVERRIDE (an executable path, e.g. $CUOBJDUMP),
# NAME on PATH, the CUDA toolkit's bin folder, and the nvidia/*/bin folders of every Python site
# directory (where the PyPI wheels nvidia-cuda-cuobjdump / -nvdisasm put them); fails if none.

python_tool_dirs() {
    local py
    for py in python3 python; do
        command -v "$py" >/dev/null 2>&1 || continue
        "$py" - <<'EOF' 2>/dev/null
import site, sys
dirs = list(sys.path)
try:
    dirs += site.getsitepackages()
except Exception:
    pass
try:
    dirs.append(site.getusersitepackages())
except Exception:
    pass
for d in dirs:
    for sub in ("nvidia/cu13/bin", "nvidia/cuda_cuobjdump/bin", "nvidia/cuda_nvdisasm/bin"):
        print(d + "/" + sub)
EOF
        return
    done
}

find_tool() {  # name, env override
    local name="$1" override="$2" dir
    if [[ -n "$override" && -x "$override" ]]; then echo "$override"; return 0; fi
    if command -v "$name" >/dev/null 2>&1; then command -v "$name"; return 0; fi
    for dir in "${CUDA_HOME:-/usr/local/cuda}/bin" /usr/local/cuda/bin $(python_tool_dirs); do
        if [[ -x "$dir/$name" ]]; then echo "$dir/$name"; return 0; fi
    done
    return 1
}
