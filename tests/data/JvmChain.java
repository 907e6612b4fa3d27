// The HotSpot system tests' workload (tests/system/test_jvm.sh): main -> alpha -> beta -> gamma,
// gamma spinning in a loop for the given seconds. The main thread takes the name given as the
// first argument (the kernel's thread name: one recording holds several JVMs). Lines that the
// test checks end in a marker comment.
class JvmChain {
    static volatile long sink;

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

    public static void main(String[] args) {
        Thread.currentThread().setName(args[0]);
        long deadline = System.nanoTime() + (long) (Double.parseDouble(args[1]) * 1e9);
        alpha(deadline); // CALL_ALPHA
    }
}
