/** A class for the compiler to compile. */
public final class Seed {
    static int one() {
        return 1;
    }
}
