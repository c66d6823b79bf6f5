"""The simulator's loop (serving/simulator.py's docstring, steps 1-5) as one function over a ``sim_run._Run``.

Each turn: (1) arrivals due by now join the FCFS queue; (2) admission; then either
  a run     of pure-decode steps taken at once, when no request was just admitted, no prefill chunk fits beside the
            decodes and at least one step's blocks fit: k steps up to the next completion, the next arrival or the
            last step whose blocks fit (sim_blocks.DecodeBlocks.steps_within), timed in closed form
            (sim_table.StepTable.decode_run). A run ends at each event; where the next turn would only take a run
            again (no queue, no prompt prefilling, decodes left: an arrival only looked up, a completion that
            leaves decodes) ``span`` takes it in place, else the next turn looks again, so runs go on past an
            arrival that cannot be admitted or a completion that frees nothing the queue's head can use: the checks
            are the step's own, and the steps and their order are those of stepping (tests/serving/
            test_*stepwise.py: against ``_Run.stepwise``, one step per turn; each lookup at its own step)
  or a step (3) blocks for its decodes, preempting the latest-admitted request while one is missing; (4) prefill
            chunks in admission order under what the decodes leave of the budget; (5) its time t(n, context, P);
            prompts done emit their first token and decode on, decodes done retire.
Why one function: the loop turns over about four times a request (an arrival, its loads done, a completion, a
prefill), each turn a few list reads, so the state the turns read is in local variables (the steps' pieces are
closures over them), the per request lists and queues are the run's (mutated in place), and the counters are
written back to the run at the end. (As methods over attributes it took ~1.13x the CPU on benchmarks/sessions.py's
agentic plan; what remains is spread: ~3,900 bytecodes and ~36 Python calls a request (sys.settrace's opcode
events on 40 of its sessions; cachegrind: ~217k instructions a request, ~44% of them in CPython's eval loop itself):
runs and the step table ~1,140 (span, decode_run, at, one step), admission, steps and events ~890, the session
hooks and their prefix cache ~1,880 (lookup, admission's look again, pins, register, release). The hooks' loops
over a chain are plain loops: generators and comprehensions there (a frame each call) had cost ~1/6 of the
instructions.) ``run.hooks`` (None for plain requests) is the session simulator's (sim_session_run): a prompt looked
up in the KV tiers on arrival (it joins the queue when its loads finish), the blocks its prefix hit saves at
admission, its prompt registered when computed, its references released when preempted or done; each hook that
changes the shared prefixes returns ``extra``, the blocks the pool ledger counts twice (added to the free count).
"""

from __future__ import annotations

from heapq import heappop, heappush
from math import inf

EPS_S = 1e-12  # an arrival this close to a step boundary is in time for that step


def run_loop(run) -> None:
    """Step ``run`` until every request finished (module docstring). The steps' pieces are closures over the loop's
    locals (``nonlocal`` for the counters they change); its counters are written back to ``run`` at the end."""
    isl, osl, need0, need, done, gen = run.isl, run.osl, run.need0, run.need, run.done, run.gen
    held, a, serial, full = run.held, run.a, run.serial, run.full
    arrival, first, ttft, finish, qlen = run.arrival, run.first, run.ttft, run.finish, run.qlen
    running, prefilling, waiting, pending, heap = run.running, run.prefilling, run.waiting, run.pending, run.heap
    dec, table, hooks, gate = run.dec, run.table, run.hooks, run.gate
    decode_run = table.decode_run
    kv, blk, budget, max_batch, chunked, reserve = run.kv, run.blk, run.budget, run.max_batch, run.chunked, run.reserve
    N, closed, stepwise = run.N, run.closed, run.stepwise
    if hooks is not None:  # its events, bound once
        h_arrived, h_blocks, h_admitted = hooks.arrived, hooks.admit_blocks, hooks.admitted
        h_computed, h_preempted, h_retired = hooks.computed, hooks.preempted, hooks.retired
        looked_up = hooks.looked_up  # per request: its lookup done (its arrival, then its loads done)
    now, S, finished, issued, serials = 0.0, 0, 0, run.issued, 0
    held_pf = sum_a = reserved = extra = 0  # prefilling blocks, Σ a_r, reserve_output's blocks, the hooks' extra
    tokens_out = prefilled_tokens = max_used = max_q = preemptions = 0

    def admit_blocks(r: int) -> int:
        """ceil((ISL + max(g − 1, 0)) / b), less what the hooks' prefix hit holds already."""
        g = gen[r]
        b = -(-(isl[r] + (g - 1 if g > 1 else 0)) // blk)
        return b if hooks is None else h_blocks(r, b)

    def admit() -> list[int]:
        """Admission in queue order while the batch has room and the head's blocks fit; the requests admitted."""
        nonlocal held_pf, reserved, serials, extra
        admitted, free = [], kv - held_pf - dec.held_now + extra
        # a chunking engine admits only while the step's token budget has room after the running requests' decodes
        # and prompt chunks (vLLM v1 Scheduler.schedule, vllm/v1/core/sched/scheduler.py: "while self.waiting and
        # token_budget > 0"): the others wait, holding no blocks. SGLang's PrefillAdder subtracts the running decodes
        # only under --enable-mixed-chunk; the loop charges them for every chunking engine (an approximation there)
        left = budget - dec.n - (sum(need[r] - done[r] for r in prefilling) if prefilling else 0) if chunked else inf
        while waiting and len(running) < max_batch and free > 0 and left > 0:  # (a request takes a block at least)
            r = waiting[0]
            b = admit_blocks(r)
            if b > free or (reserve and reserved + full[r] > kv):
                break
            waiting.popleft()
            free -= b
            left -= need[r] - done[r]
            if reserve:
                reserved += full[r]
            held[r] = b
            held_pf += b
            running[r] = prefilling[r] = None
            serial[r] = serials
            serials += 1
            admitted.append(r)
        if admitted and hooks is not None:
            extra = h_admitted(admitted, now)
        return admitted

    def retire(r: int) -> None:
        """r is done: its place and blocks freed; a closed loop's client sends its next request (or the hooks
        release the turns that follow r)."""
        nonlocal finished, issued, reserved, extra
        del running[r]
        if reserve:
            reserved -= full[r]
        finish[r] = now
        finished += 1
        if hooks is not None:
            extra = h_retired(r, now, kv - held_pf - dec.held_now)
        elif closed and issued < N:
            arrival[issued] = now
            heappush(pending, (now, issued))
            issued += 1

    def preempt(v: int) -> int:
        """Recompute: free v's blocks (returned), re-queue it at the front to prefill what it had cached again."""
        nonlocal held_pf, sum_a, reserved, extra, preemptions
        if hooks is not None:
            extra = h_preempted(v)
        if v in prefilling:
            freed = held[v]
            held_pf -= freed
            del prefilling[v]
        else:
            av = a[v]
            freed = -(-(av + S) // blk)
            gen[v] = av + S - isl[v] + 1
            dec.remove(av)
            sum_a -= av
        del running[v]
        if reserve:
            reserved -= full[v]
        serial[v] = -1
        need[v], done[v] = need0[v] + max(gen[v] - 1, 0), 0
        waiting.appendleft(v)
        preemptions += 1
        return freed

    def make_room(free: int) -> None:
        """Blocks for this step's decodes (a decode takes at most one a step): each decoder at a block boundary
        takes one, preempting the latest-admitted request while none is free."""
        for r in [r for r in running if r not in prefilling and not (a[r] + S) % blk]:  # (running: serial >= 0)
            while free < 1 and r in running:
                free += preempt(next(reversed(running)))
            if r in running:
                free -= 1

    def prefilled(r: int) -> None:
        """r's prompt is in the cache: its first token (unless recomputing), then it decodes (or is done)."""
        nonlocal held_pf, tokens_out, sum_a, extra
        del prefilling[r]
        held_pf -= held[r]
        g = gen[r]
        if g == 0:
            g = gen[r] = 1
            tokens_out += 1
            first[r] = now
            ttft[r] = now - arrival[r]
        if hooks is not None:
            extra = h_computed(r, g < osl[r])
        if g >= osl[r]:
            serial[r] = -1
            retire(r)
            return
        ar = isl[r] + g - 1 - S
        a[r] = ar
        dec.add(ar)
        sum_a += ar
        heappush(heap, (S + osl[r] - g, serial[r], r))

    def complete() -> None:
        """The decodes done by step S retire (a heap entry whose serial is stale was preempted since)."""
        nonlocal sum_a
        while heap and heap[0][0] <= S:
            _, ser, r = heappop(heap)
            if serial[r] == ser:
                ar = a[r]
                dec.remove(ar)
                sum_a -= ar
                serial[r] = -1
                gen[r] = osl[r]
                retire(r)

    def arrivals() -> None:
        """1. the arrivals due by now join the FCFS queue (a session's turn when its prefix's loads finish: the
        hooks' lookup on its first arrival returns when they do, and it arrives again then)."""
        due = now + EPS_S
        while pending and pending[0][0] <= due:
            t, r = heappop(pending)
            if hooks is not None and not looked_up[r]:
                ready = h_arrived(r, t, kv - held_pf - dec.held_now)
                if ready > t + EPS_S:
                    heappush(pending, (ready, r))
                    continue
            qlen[r] = len(waiting)
            waiting.append(r)

    def span(n: int) -> bool:
        """Runs of pure-decode steps of the n decodes at once (module docstring), each up to the next completion,
        the next arrival or the last step whose blocks fit; False where not one step fits (the loop steps instead).
        After a run, where the next turn would find no queue and again no prefill chunk that fits (an arrival only
        looked up, a completion that leaves decodes), the next run is taken here: the turn's own checks, in its
        order, without the turn."""
        nonlocal now, S, tokens_out, max_used
        ran = False
        while True:
            top = heap[0]
            while serial[top[2]] != top[1]:
                heappop(heap)  # preempted since
                top = heap[0]
            k, free = top[0] - S, kv - held_pf - dec.held_now + extra
            if n * -(-k // blk) > free:  # (else all k fit: DecodeBlocks.steps_within's first test)
                k = dec.steps_within(S, free, k)
                if k < 1:
                    return ran
            k, run_s = decode_run(n, sum_a / n + S + 1, pending[0][0] - EPS_S - now if pending else inf, k)
            now += run_s  # (the decodes at their mean context)
            S += k
            used = held_pf + dec.at(S) - extra  # (each shared block once: extra, the blocks counted twice)
            tokens_out += n * k
            if used > max_used:
                max_used = used
            ran = True
            if top[0] <= S:
                complete()
            # the next turn (the loop's 1 and 2): its arrivals; a run again unless a queue, a step or a chunk
            if pending and pending[0][0] <= now + EPS_S:
                arrivals()
            n = dec.n
            if waiting or prefilling or not n:  # (a queue to admit from, a chunk that may fit now, no decodes)
                return True

    while finished < N:
        if pending and pending[0][0] <= now + EPS_S:  # 1.
            arrivals()
        if not running and not waiting:
            now = pending[0][0]
            continue
        # 2. admission; then a run of pure-decode steps where none was admitted and no prefill chunk fits
        admitted = admit() if waiting and len(running) < max_batch else ()
        if len(waiting) > max_q:
            max_q = len(waiting)
        n = dec.n
        if n and not admitted and not stepwise:
            fits = False  # the first prompt's chunk
            if prefilling:
                r, left = next(iter(prefilling)), budget - n
                fits = left > 0 and (chunked or need[r] - done[r] <= left)
            if not fits and span(n):
                continue
        # 3. blocks for this step's decodes
        free = kv - held_pf - dec.held_now + extra
        if n > free and dec.hist[-S % blk] > free:  # held(S + 1) − held(S): the decoders at a block boundary
            make_room(free)
            n = dec.n
        # 4. prefill chunks in admission order under what the decodes leave of the budget
        left, chunks, P = budget - n, [], 0
        for r in prefilling:
            if left <= 0:
                break
            rem = need[r] - done[r]
            c = rem if rem < left else left
            if c < rem and not chunked:
                break
            chunks.append((r, c))
            left -= c
            P += c
        # TensorRT-LLM's delayed batching holds the prompts picked while others decode (serving/batch_wait_gate.py)
        if gate is not None and chunks and n and gate.holds(sum(isl[r] for r, _ in chunks), n):
            chunks, P = [], 0
        if not chunks and n == 0:  # nothing to run: a request preempted itself, or say why not
            if waiting and not running and admit_blocks(waiting[0]) <= kv:
                continue
            raise ValueError("max_num_tokens: no request can be scheduled (a preempted request's prompt and "
                             "generated tokens exceed the step budget of an engine that does not chunk prefill)")
        # 5. the step: its time at the decodes' mean context (ISL + generated), then its events
        now += table(n, sum_a / n + S + 1 if n else 1.0, P)
        S += 1
        used = held_pf + dec.at(S) - extra  # (each shared block once: extra, the blocks counted twice)
        tokens_out += n
        prefilled_tokens += P
        if used > max_used:
            max_used = used
        for r, c in chunks:
            done[r] += c
            if done[r] >= need[r]:
                prefilled(r)
        if heap and heap[0][0] <= S:
            complete()
    run.now, run.S, run.issued, run.preemptions, run.max_used, run.max_q = now, S, issued, preemptions, max_used, max_q
    run.tokens_out, run.prefilled_tokens = tokens_out, prefilled_tokens
