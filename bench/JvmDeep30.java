// bench/jvm.sh's workload: main -> down(30) -> down(29) ... -> down(1), 30 frames of down, whose
// leaf spins a short loop; main calls the chain again and again for the given seconds, so every
// frame gets compiled (C2 inlines down into itself once: MaxRecursiveInlineLevel). Lines that
// the benchmark checks end in a marker comment.
class JvmDeep30 {
    static volatile long sink;

    static long down(int n, long acc) {
        if (n > 1)
            return down(n - 1, acc) + 1; // RECURSE
        for (int i = 0; i < 20000; i++) // HOT
            acc = acc * 31 + (acc >>> 7); // HOT
        return acc; // HOT
    }

    public static void main(String[] args) {
        long deadline = System.nanoTime() + (long) (Double.parseDouble(args[0]) * 1e9);
        long acc = 1;
        while (System.nanoTime() < deadline)
            acc = down(30, acc); // CALL
        sink = acc;
    }
}
