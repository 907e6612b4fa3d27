// The HotSpot system tests' code-cache churn (tests/system/test_jvm.sh): round after round, a
// fresh class loader defines JvmChurn$Worker again, its spin() runs hot enough to be compiled,
// and the loader is dropped and collected (class unloading, compiled code freed, code-cache
// memory reused by the next round's code). Samples in spin() must never be named after another
// method. The main thread takes the name given as the first argument.
import java.io.InputStream;
import java.lang.reflect.Method;

class JvmChurn {
    public static class Worker {
        public static long spin(long n) {
            long acc = 1;
            for (long i = 0; i < n; i++) { // SPIN
                acc = acc * 31 + (acc >>> 7); // SPIN
            } // SPIN
            return acc;
        }
    }

    static class Loader extends ClassLoader {
        final byte[] bytes;

        Loader(byte[] bytes) {
            super(null);
            this.bytes = bytes;
        }

        @Override
        protected Class<?> findClass(String name) throws ClassNotFoundException {
            if (!name.equals("JvmChurn$Worker"))
                throw new ClassNotFoundException(name);
            return defineClass(name, bytes, 0, bytes.length);
        }
    }

    static volatile long sink;

    static void round(byte[] bytes) throws Exception {
        Class<?> c = new Loader(bytes).loadClass("JvmChurn$Worker");
        Method m = c.getMethod("spin", long.class);
        for (int i = 0; i < 20; i++)
            sink += (Long) m.invoke(null, 20000L); // CALL_SPIN
    }

    public static void main(String[] args) throws Exception {
        Thread.currentThread().setName(args[0]);
        long deadline = System.nanoTime() + (long) (Double.parseDouble(args[1]) * 1e9);
        byte[] bytes;
        try (InputStream in = JvmChurn.class.getResourceAsStream("JvmChurn$Worker.class")) {
            bytes = in.readAllBytes();
        }
        for (int n = 0; System.nanoTime() < deadline; n++) {
            round(bytes); // CALL_ROUND
            if (n % 10 == 9)
                System.gc();
        }
        Thread.sleep(JvmChain.LINGER_MS);
    }
}
