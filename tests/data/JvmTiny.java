// A method too small to be worth a frame of its own, kept out of line, called from a hot loop
// (tests/system/test_jvm.sh): most of its instructions build or tear down its frame, so a third
// of its samples land in its prologue or epilogue, where the walk must find the caller from
// the code at pc rather than the frame size. The main thread takes the name given as the first
// argument. Run with -XX:CompileCommand=dontinline,JvmTiny::tiny.
class JvmTiny {
    static long tiny(long x) {
        return x * 31 + 7; // TINY
    }

    static long loop(long n) {
        long s = 0;
        for (long i = 0; i < n; i++)
            s += tiny(s ^ i); // CALL_TINY
        return s;
    }

    static volatile long sink;

    public static void main(String[] args) throws Exception {
        Thread.currentThread().setName(args[0]);
        long deadline = System.nanoTime() + (long) (Double.parseDouble(args[1]) * 1e9);
        while (System.nanoTime() < deadline)
            sink += loop(100000); // CALL_LOOP
        Thread.sleep(JvmChain.LINGER_MS);
    }
}
