// The HotSpot system tests' JNI round trip (tests/system/test_jvm.sh): main -> alpha -> down
// (native, tests/data/jvm_jni.c) -> C -> back into Java through JNI -> up, which spins; until
// the given seconds are over. The main thread takes the name given as the second argument.
// Lines that the test checks end in a marker comment.
class JvmJni {
    static volatile long sink;
    static long deadline;

    static native void down();

    static boolean up() {
        long acc = 1;
        for (int i = 0; i < 200000; i++) { // HOT
            acc = acc * 31 + (acc >>> 7); // HOT
        } // HOT
        sink = acc; // UP_END
        return System.nanoTime() < deadline; // UP_END
    }

    static void alpha() {
        down(); // CALL_DOWN
    }

    public static void main(String[] args) throws InterruptedException {
        System.load(args[0]);
        // The library was built just now: let the profiler identify it before the round trips
        // (what a never-seen file's first samples get is test_deferred's and test_new_mappings')
        Thread.sleep(700);
        Thread.currentThread().setName(args[1]);
        deadline = System.nanoTime() + (long) (Double.parseDouble(args[2]) * 1e9);
        alpha(); // CALL_ALPHA
        Thread.sleep(JvmChain.LINGER_MS);
    }
}
