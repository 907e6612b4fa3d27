/* The native half of tests/data/JvmJni.java: JvmJni.down() calls JvmJni.up() back through JNI
 * until it returns false, so a sample in up() has Java -> C -> Java on its stack. Built at test
 * time by tests/system/test_jvm.sh (gcc -shared, the JDK's jni.h).
 */
#include <jni.h>

JNIEXPORT void JNICALL Java_JvmJni_down(JNIEnv *env, jclass cls)
{
	jmethodID up = (*env)->GetStaticMethodID(env, cls, "up", "()Z");

	if (!up)
		return;
	while ((*env)->CallStaticBooleanMethod(env, cls, up) && !(*env)->ExceptionCheck(env))
		;
}
