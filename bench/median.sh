# median.sh, sourced by httpratio.sh and issue27.sh: median prints the
# median of the numbers on stdin, one a line ("nan" when there are none).
median() {
	sort -g | awk '{v[NR] = $1} END {if (NR == 0) print "nan"; else print NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'
}
