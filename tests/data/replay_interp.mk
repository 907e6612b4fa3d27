# The JVM workload of tests/unit/test_replay_interp.c: JvmChain.java (the one test_jvm.sh
# records) compiled by OpenJDK 17's javac, which scripts/setup.sh installs; without that JDK
# nothing is built here and the test skips (fails under CI).
JAVAC17 := /usr/lib/jvm/java-17-openjdk-amd64/bin/javac

ifneq ($(wildcard $(JAVAC17)),)
FIXTURES += $(BUILD)/jvm/JvmChain.class

$(BUILD)/jvm/JvmChain.class: JvmChain.java | $(BUILD)
	@mkdir -p $(BUILD)/jvm
	$(JAVAC17) -d $(BUILD)/jvm $<
endif
