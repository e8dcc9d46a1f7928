package rulefmt

// specOf returns r's settings when its kind's are of type T, else nil: a
// test's short way to read one kind's block.
func specOf[T Spec](r Rule) T {
	s, _ := r.Spec.(T)
	return s
}
