// The HotSpot system tests' workload (tests/system/test_jvm.sh): main -> alpha -> beta -> gamma,
// gamma spinning in a loop for the given seconds; with a third argument, a second thread runs the
// same chain. The main thread takes the name given as the first argument (the kernel's thread
// name: one recording holds several JVMs). Lines that the test checks end in a marker comment.
class JvmChain {
    static volatile long sink;
    // The JVM stays this long after its work: a recorder behind on a loaded box reads its
    // memory (names of the frames) only while it lives.
    static final long LINGER_MS = 2000;

    static long mix(long x) {
        return x * 31 + (x >>> 7);
    }

    static void gamma(long deadline) {
        long acc = 1;
        while (System.nanoTime() < deadline) { // LOOP
            for (int i = 0; i < 10000; i++) { // HOT
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
