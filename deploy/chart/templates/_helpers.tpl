{{- define "ontap-operator.labels" -}}
app.kubernetes.io/name: ontap-operator
{{- end }}
