// The HotSpot system tests' workload (tests/system/test_jvm.sh): main -> alpha -> beta -> gamma ->
// mix -> heavy, gamma looping for the given seconds (mix inlined into it when compiled); with a third argument, a second thread runs the
// same chain. The main thread takes the name given as the first argument (the kernel's thread
// name: one recording holds several JVMs). Lines that the test checks end in a marker comment.
class JvmChain {
    static volatile long sink;
    // The JVM stays this long after its work: a recorder behind on a loaded box reads its
    // memory (names of the frames) only while it lives.
    static final long LINGER_MS = 2000;

    // Small: C1 and C2 inline it into gamma's compiled loop (its frame is an inlined one).
    static long mix(long x) {
        return heavy(x * 31 + (x >>> 7)); // CALL_HEAVY
    }

    // Too big to inline (more than C2's FreqInlineSize, 325 bytes of bytecode): a compiled
    // frame of its own, called from the code of mix inlined into gamma.
    static long heavy(long x) {
        for (long i = 0; i < 200; i++) { // HEAVY
            x = x * 31 + (x >>> 7); // HEAVY
        } // HEAVY
        if (x == 0x5eedL) { // HEAVY (never true: bytecode that makes heavy too big to inline)
            x = x * 3 + 1;
            x = x * 5 + 2;
            x = x * 7 + 3;
            x = x * 9 + 4;
            x = x * 11 + 5;
            x = x * 13 + 6;
            x = x * 15 + 7;
            x = x * 17 + 8;
            x = x * 19 + 9;
            x = x * 21 + 10;
            x = x * 23 + 11;
            x = x * 25 + 12;
            x = x * 27 + 13;
            x = x * 29 + 14;
            x = x * 31 + 15;
            x = x * 33 + 16;
            x = x * 35 + 17;
            x = x * 37 + 18;
            x = x * 39 + 19;
            x = x * 41 + 20;
            x = x * 43 + 21;
            x = x * 45 + 22;
            x = x * 47 + 23;
            x = x * 49 + 24;
            x = x * 51 + 25;
            x = x * 53 + 26;
            x = x * 55 + 27;
            x = x * 57 + 28;
            x = x * 59 + 29;
            x = x * 61 + 30;
            x = x * 63 + 31;
            x = x * 65 + 32;
            x = x * 67 + 33;
            x = x * 69 + 34;
            x = x * 71 + 35;
            x = x * 73 + 36;
            x = x * 75 + 37;
            x = x * 77 + 38;
            x = x * 79 + 39;
            x = x * 81 + 40;
            x = x * 83 + 41;
            x = x * 85 + 42;
            x = x * 87 + 43;
            x = x * 89 + 44;
        }
        return x; // HEAVY
    }

    static void gamma(long deadline) {
        long acc = 1;
        while (System.nanoTime() < deadline) { // LOOP
            for (int i = 0; i < 100; i++) { // HOT
                acc = mix(acc); // HOT
            } // HOT
        }
        sink = acc;
    }

    static void beta(long deadline) {
        gamma(deadline); // CALL_GAMMA
    }

    static void alpha(long deadline) {
        beta(deadline); // CALL_BETA
    }

    // A second thread running the same chain, named after the main thread plus "w".
    static class Worker extends Thread {
        final long deadline;

        Worker(String name, long deadline) {
            super(name);
            this.deadline = deadline;
        }

        @Override
        public void run() {
            alpha(deadline); // CALL_ALPHA_WORKER
        }
    }

    public static void main(String[] args) throws InterruptedException {
        Thread.currentThread().setName(args[0]);
        long deadline = System.nanoTime() + (long) (Double.parseDouble(args[1]) * 1e9);
        Worker w = args.length > 2 ? new Worker(args[0] + "w", deadline) : null;
        if (w != null)
            w.start();
        alpha(deadline); // CALL_ALPHA
        if (w != null)
            w.join();
        Thread.sleep(LINGER_MS);
    }
}
