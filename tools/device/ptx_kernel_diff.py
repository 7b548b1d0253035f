# Compares kernels between two `nvcc -ptx` outputs of one .cu file (e.g. shape_engine.cu before and after a change):
#   python3 tools/device/ptx_kernel_diff.py OLD.ptx NEW.ptx [OLD_NAME=NEW_NAME ...]
# Prints `same` / `DIFF` per kernel present in both (and per mapped pair: a renamed or newly templated kernel, mangled
# names as in the PTX). Normalized: the kernel's own name, branch labels, local-stack names, .loc line info, comments,
# shared-array names of attention_kernel and the .param declarations (an added unused parameter, the byte size of
# a parameter struct: fields appended at its end). Same PTX => ptxas
# emits the same code.
import re, sys, difflib
def funcs(path):
    s = open(path).read(); out = {}
    # a kernel runs to the next entry (a '}' line can also close an inline-asm block inside the body: session 25
    # found that cutting there compared only each kernel's first part)
    ms = list(re.finditer(r'\.visible \.entry (\S+)\(', s))
    for i, m in enumerate(ms):
        out[m.group(1)] = s[m.start():ms[i + 1].start() if i + 1 < len(ms) else len(s)]
    return out
def norm(name, body):
    body = body.replace(name, 'FN')
    body = re.sub(r'\$L__BB\d+_', '$L__BB_', body)
    body = re.sub(r'__local_depot\d+', '__local_depot', body)  # numbered by the kernel's place in the file
    body = re.sub(r'_ZZN9cubeforge4cuda12shape_detail16attention_kernel\S*?E2(Ks|Vs)', r'SH_\1', body)
    body = re.sub(r'\.loc\s+\d+ \d+ \d+.*', '', body); body = re.sub(r'//.*', '', body)
    L = [l.strip() for l in body.split('\n') if l.strip()]
    L = [re.sub(r'(\.param \.align \d+ \.b8 FN_param_\d+)\[\d+\]', r'\1[]', l) for l in L]  # a struct grown at its end
    return [l for l in L if not re.match(r'\.param \.(f32|u32|u64) FN_param_\d+,?$', l)]
a, b = funcs(sys.argv[1]), funcs(sys.argv[2])
pairs = [(k, k) for k in a if k in b] + [tuple(m.split('=', 1)) for m in sys.argv[3:]]
for ka, kb in pairs:
    if ka not in a or kb not in b:
        print('missing', ka if ka not in a else kb)
        continue
    print('DIFF' if norm(ka, a[ka]) != norm(kb, b[kb]) else 'same', kb[:90])
print(len(pairs), 'kernels compared')
