#!/usr/bin/env python3
"""Deadlock check of the second reference kernels' barrier protocols, without a GPU.

Usage: python3 pipeline/scripts/barrier_model.py   (exit 0: every modelled launch finishes)

Each kernel's producer and consumers are written here as the sequence of barrier operations the
CUDA source performs, in the same order: mbarriers (an expected arrival count per phase,
transaction bytes, waits on a phase's parity, as `mbarrier.try_wait.parity` reads it) and named
barriers (`bar.sync` / `bar.arrive`, 128 threads a warpgroup). The actors are stepped greedily:
a protocol that can deadlock stops with actors left waiting. Modelled, for several sizes each:
  tasks/reference/wgmma_attn_fwd_ov  the K and V rings (K one tile ahead: common/attn_fwd.cuh's
                                     load_k_ahead_of_v and consume_tiles) with and without the
                                     warpgroups' ping-pong, n_kv = 1..8
  tasks/reference/wgmma_attn_fwd_fp8 the same rings with V passed through three transposing
                                     warps into a V^T ring, n_kv = 1..8
  tasks/reference/common/gemm_sk.cuh the stage ring, alone and in 2-CTA clusters (B multicast
                                     into both CTAs, empty barriers counting both CTAs' consumers)
  tasks/reference/tma_decode         the 3-stage token ring, chunks of 0 to 100 tokens
It checks the transcription, not the compiled code: a change to a kernel's barriers must be
made here too. Changing a parity or dropping the ping-pong's first arrival makes it fail.
"""

class MBar:
    def __init__(self, count):
        self.count = count; self.pending = count; self.tx = 0; self.phase = 0
    def _check(self):
        if self.pending == 0 and self.tx == 0:
            self.phase += 1; self.pending = self.count
    def arrive(self): 
        assert self.pending > 0; self.pending -= 1; self._check()
    def expect(self, b):
        self.tx += b; self.arrive()
    def complete(self, b):
        self.tx -= b; self._check()
    def ready(self, parity):
        return (self.phase & 1) != parity

class Named:
    def __init__(self): self.n = 0; self.gen = 0

def run(actors, limit=100000):
    live = dict(actors); cond = {}
    steps = 0
    while live:
        progressed = False
        for name, g in list(live.items()):
            if name not in cond:
                try:
                    cond[name] = g.send(None); progressed = True
                except StopIteration:
                    del live[name]; progressed = True; continue
            if cond[name]():
                del cond[name]; progressed = True
        steps += 1
        if not progressed:
            return False, list(live)
        if steps > limit: return False, ['limit']
    return True, []

# --- attention forward v2 (one CTA) --------------------------------------------------------
def attn(n_kv, pingpong, STAGES=2):
    q_full = MBar(1); kf=[MBar(1) for _ in range(STAGES)]; ke=[MBar(2) for _ in range(STAGES)]
    vf=[MBar(1) for _ in range(STAGES)]; ve=[MBar(2) for _ in range(STAGES)]
    bars = {1: Named(), 2: Named()}
    T=1
    def load(bar):  # TMA completes right away
        bar.complete(T)
    def producer():
        q_full.expect(T); load(q_full)
        def load_k(n):
            s=n%STAGES
            yield lambda: ke[s].ready(((n//STAGES)&1)^1)
            kf[s].expect(T); load(kf[s])
        yield from load_k(0)
        for n in range(n_kv):
            if n+1<n_kv: yield from load_k(n+1)
            s=n%STAGES
            yield lambda: ve[s].ready(((n//STAGES)&1)^1)
            vf[s].expect(T); load(vf[s])
    def named_sync(i):
        b=bars[i]; b.n += 128
        if b.n >= 256:
            b.n -= 256; b.gen += 1; return
        g=b.gen
        yield lambda: b.gen > g
    def named_arrive(i):
        b=bars[i]; b.n += 128
        if b.n >= 256:
            b.n -= 256; b.gen += 1
    def consumer(half):
        def my_turn():
            if pingpong: yield from named_sync(1+half)
        def your_turn(last):
            if pingpong and not (last and half==1): named_arrive(2-half)
        if pingpong and half==1: named_arrive(1)
        yield lambda: q_full.ready(0)
        yield from my_turn()
        yield lambda: kf[0].ready(0)
        your_turn(False)
        ke[0].arrive()
        for n in range(n_kv-1):
            s=n%STAGES; s1=(n+1)%STAGES
            yield from my_turn()
            yield lambda: kf[s1].ready(((n+1)//STAGES)&1)
            yield lambda: vf[s].ready((n//STAGES)&1)
            your_turn(False)
            ke[s1].arrive()
            ve[s].arrive()
        s=(n_kv-1)%STAGES
        yield from my_turn()
        yield lambda: vf[s].ready(((n_kv-1)//STAGES)&1)
        your_turn(True)
        ve[s].arrive()
    return [('p',producer()),('c0',consumer(0)),('c1',consumer(1))]

# --- fp8 attention forward (one CTA): V goes through three transposing warps into V^T ------
def attn_fp8(n_kv, STAGES=2):
    q_full = MBar(1); kf=[MBar(1) for _ in range(STAGES)]; ke=[MBar(2) for _ in range(STAGES)]
    vf=[MBar(1) for _ in range(STAGES)]; ve=[MBar(3) for _ in range(STAGES)]
    tf=[MBar(3) for _ in range(STAGES)]; te=[MBar(2) for _ in range(STAGES)]
    def producer():
        q_full.expect(1); q_full.complete(1)
        def load_k(n):
            s=n%STAGES
            yield lambda: ke[s].ready(((n//STAGES)&1)^1)
            kf[s].expect(1); kf[s].complete(1)
        yield from load_k(0)
        for n in range(n_kv):
            if n+1<n_kv: yield from load_k(n+1)
            s=n%STAGES
            yield lambda: ve[s].ready(((n//STAGES)&1)^1)
            vf[s].expect(1); vf[s].complete(1)
    def transposer():
        for n in range(n_kv):
            s=n%STAGES
            yield lambda: vf[s].ready((n//STAGES)&1)
            yield lambda: te[s].ready(((n//STAGES)&1)^1)
            tf[s].arrive(); ve[s].arrive()
    def consumer():
        yield lambda: q_full.ready(0)
        yield lambda: kf[0].ready(0)
        ke[0].arrive()
        for n in range(n_kv-1):
            s=n%STAGES; s1=(n+1)%STAGES
            yield lambda: kf[s1].ready(((n+1)//STAGES)&1)
            yield lambda: tf[s].ready((n//STAGES)&1)
            ke[s1].arrive()
            te[s].arrive()
        s=(n_kv-1)%STAGES
        yield lambda: tf[s].ready(((n_kv-1)//STAGES)&1)
        te[s].arrive()
    return ([('p',producer())] + [(f't{w}',transposer()) for w in range(3)]
            + [(f'c{h}',consumer()) for h in range(2)])

# --- GEMM in clusters of CL (two CTAs share each stage's barriers protocol) ----------------
def gemm(iters, CL, STAGES=4):
    full=[[MBar(1) for _ in range(STAGES)] for _ in range(CL)]
    empty=[[MBar(2*CL) for _ in range(STAGES)] for _ in range(CL)]
    A=1; B=2
    def producer(r):
        for it in range(iters):
            s=it%STAGES
            yield lambda: empty[r][s].ready(((it//STAGES)&1)^1)
            full[r][s].expect(A+B)
            full[r][s].complete(A)  # own A
            for d in range(CL): full[d][s].complete(B//CL)  # multicast half of B
    def consumer(r, wg):
        prev=None
        for it in range(iters):
            s=it%STAGES
            yield lambda: full[r][s].ready((it//STAGES)&1)
            if prev is not None:
                for d in range(CL): empty[d][prev].arrive()
            prev=s
        if prev is not None:
            for d in range(CL): empty[d][prev].arrive()
    actors=[]
    for r in range(CL):
        actors.append((f'p{r}',producer(r)))
        for wg in range(2): actors.append((f'c{r}{wg}',consumer(r,wg)))
    return actors

# --- decode ------------------------------------------------------------------------------
def decode(n, TOK=8, STAGES=3, WARPS=8):
    full=[MBar(1) for _ in range(STAGES)]; empty=[MBar(WARPS) for _ in range(STAGES)]
    blocks=(n+TOK-1)//TOK
    def producer():
        for it in range(blocks):
            s=it%STAGES; cnt=min(TOK,n-it*TOK)
            yield lambda: empty[s].ready(((it//STAGES)&1)^1)
            full[s].expect(2*cnt)
            for j in range(cnt): full[s].complete(1); full[s].complete(1)
    def consumer(w):
        for it in range(blocks):
            s=it%STAGES
            yield lambda: full[s].ready((it//STAGES)&1)
            empty[s].arrive()
    return [('p',producer())]+[(f'c{w}',consumer(w)) for w in range(WARPS)]

ok=True
for n in range(1,9):
    for pp in (0,1):
        r,who=run(attn(n,pp))
        if not r: print('attn deadlock', n, pp, who); ok=False
for n in range(1,9):
    r,who=run(attn_fp8(n))
    if not r: print('attn fp8 deadlock', n, who); ok=False
for it in [0,1,3,4,5,8,13]:
    for cl in (1,2):
        r,who=run(gemm(it,cl))
        if not r: print('gemm deadlock', it, cl, who); ok=False
for n in [0,1,7,8,9,24,25,100]:
    r,who=run(decode(n))
    if not r: print('decode deadlock', n, who); ok=False
print('every modelled launch finishes' if ok else 'DEADLOCK')
raise SystemExit(0 if ok else 1)

