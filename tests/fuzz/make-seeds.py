#!/usr/bin/env python3
# Regenerates the seed corpora tests/fuzz/corpus/<target>/ from the fixtures (candidate answers,
# task forwards, protocol requests, shipped prompts). Run from the repository root. Seeds stay
# small (the whole corpus about 270 KB, most of it the 213 task forwards): big fixtures are left out.
import glob, json, os, re, tomllib, hashlib
root = '.'
out = 'tests/fuzz/corpus'
def put(target, name, data):
    d = os.path.join(out, target); os.makedirs(d, exist_ok=True)
    if isinstance(data, str): data = data.encode()
    open(os.path.join(d, name), 'wb').write(data)
cand = 'tests/fixtures/candidates'
small = [p for p in sorted(glob.glob(cand + '/**/*.md', recursive=True)) if os.path.getsize(p) < 2000]
refs = [cand + '/reference/' + n for n in ('L1_01.md', 'L1_05.md', 'L2_01.md', 'L2_07.md', 'L3_06_b.md', 'L3_08.md')]
# answer parser: the failing and adversarial answers (small) and a few references
for p in small + refs:
    put('fuzz_answer_parser', p.split('/')[-2] + '_' + os.path.basename(p), open(p, 'rb').read())
# torchscript: every task's forward, and the python blocks of the candidates above
seen = set()
for p in sorted(glob.glob('tasks/level*/*.toml')):
    t = tomllib.load(open(p, 'rb'))
    if 'forward' not in t: continue  # a KernelBench-only task: its reference is KernelBench's Python
    h = hashlib.sha1(t['forward'].encode()).hexdigest()
    if h in seen or len(t['forward']) > 10000: continue
    seen.add(h)
    put('fuzz_torchscript', 'task_' + os.path.basename(p).replace('.toml', '.py'), t['forward'])
pyre = re.compile(r'```python\n(.*?)```', re.S)
for p in small + refs:
    for i, m in enumerate(pyre.findall(open(p).read())):
        h = hashlib.sha1(m.encode()).hexdigest()
        if h in seen: continue
        seen.add(h)
        put('fuzz_torchscript', 'cand_' + os.path.basename(p)[:-3] + f'_{i}.py', m)
# worker: the protocol goldens, evaluate requests carrying candidate answers, a multi-line session
for p in sorted(glob.glob('tests/protocol/*.request')):
    put('fuzz_worker_request', os.path.basename(p), open(p, 'rb').read())
tasks = {'L1_01': 'L1/1', 'L1_05': 'L1/5', 'L2_01': 'L2/1', 'L2_07': 'L2/7'}
for n, tid in tasks.items():
    a = open(f'{cand}/reference/{n}.md').read()
    put('fuzz_worker_request', f'evaluate_{n}.request', json.dumps({'id': n, 'type': 'evaluate', 'task': tid, 'answer': a, 'device': 'none', 'scale': 'smoke'}) + '\n')
for n in ('forbidden_fork', 'forbidden_op', 'torchscript_loop', 'unknown_kernel'):
    d = 'failing' if os.path.exists(f'{cand}/failing/{n}.md') else 'adversarial'
    a = open(f'{cand}/{d}/{n}.md').read()
    put('fuzz_worker_request', f'evaluate_{n}.request', json.dumps({'id': n, 'type': 'evaluate', 'task': 'L1/5', 'answer': a}) + '\n')
put('fuzz_worker_request', 'session.request', '\n'.join(json.dumps(r) for r in [
    {'id': 1, 'type': 'hello'}, {'id': 2, 'type': 'tasks'}, {'id': 3, 'type': 'device'},
    {'id': 4, 'type': 'analyze', 'task': 'L2/1', 'scale': 'smoke'},
    {'id': 5, 'type': 'evaluate', 'task': 'L1/5', 'python': 'def forward(A: Tensor, s: float, p: Dict[str, Tensor]) -> Tensor:\n    return A * s\n'},
    {'id': 6, 'type': 'run_reference', 'task': 'L1/5'}, {'id': 7, 'type': 'profile', 'task': 'L1/5'},
    {'id': 8, 'type': 'compile', 'cuda': 'extern "C" __global__ void k(float* a) {}', 'arch': 'sm_90'}]) + '\n')
# templates: role template, then the partials in fuzz_templates.cpp's order, NUL-separated
partials = re.findall(r'"(\w+)"', re.search(r'kPartials\[\] = \{(.*?)\}', open('tests/fuzz/fuzz_templates.cpp').read(), re.S).group(1))
ptext = [open(f'prompts/partials/{n}.mustache').read() for n in partials]
for role in ('zero-shot/generator', 'iterative/retry', 'agent/generator', 'profiling-guided/generator', 'agent/analyzer'):
    if not os.path.exists(f'prompts/{role}.mustache'): continue
    put('fuzz_templates', role.replace('/', '_') + '.seed', '\0'.join([open(f'prompts/{role}.mustache').read()] + ptext))
put('fuzz_templates', 'small.seed', '{{#task}}{{> task}}{{/task}}{{^device.available}}none{{/device.available}}{{{answer}}}\0{{title}} {{id}}\0{{name}}')
